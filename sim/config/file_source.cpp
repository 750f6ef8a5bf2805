#include "config/file_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace shardsim::config {

std::optional<std::string> DiskFiles::read(const std::filesystem::path& file, std::size_t limit, std::string& error) const {
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (!std::filesystem::exists(status)) {
    error = "no such file";
    return std::nullopt;
  }
  if (std::filesystem::is_directory(status)) {
    error = "is a directory";
    return std::nullopt;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  // Read in chunks up to limit + 1 bytes: /dev/zero or a FIFO must not be read forever.
  std::string text;
  std::array<char, 1 << 16> chunk{};
  while (text.size() <= limit && in) {
    in.read(chunk.data(), static_cast<std::streamsize>(std::min(chunk.size(), limit + 1 - text.size())));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    error = "read error";
    return std::nullopt;
  }
  return text;
}

void MemoryFiles::add(const std::filesystem::path& file, std::string text) {
  files_[file.lexically_normal().string()] = std::move(text);
}

std::optional<std::string> MemoryFiles::read(const std::filesystem::path& file, std::size_t limit, std::string& error) const {
  auto it = files_.find(file.lexically_normal().string());
  if (it == files_.end()) {
    error = "no such file";
    return std::nullopt;
  }
  return it->second.substr(0, limit + 1);
}

std::string read_config_file(const FileSource& source, const std::filesystem::path& file, const std::optional<FileRef>& ref) {
  std::string error;
  std::optional<std::string> text = source.read(file, kMaxConfigFileBytes, error);
  if (!text) {
    const bool missing = error == "no such file";
    // Named by a key: the key is what to fix. Named on the command line: the file itself.
    if (ref) {
      throw ConfigError(ref->where, ref->key_path,
                        missing ? fmt::format("no such file: {}", file.string()) : fmt::format("cannot read {}: {}", file.string(), error));
    }
    throw ConfigError(Location{file.string(), 0, 0}, "", missing ? std::string("no such file") : fmt::format("cannot read: {}", error));
  }
  if (text->size() > kMaxConfigFileBytes) {
    throw ConfigError(Location{file.string(), 1, 1}, "",
                      fmt::format("file is larger than {} MiB; expected a configuration file of at most {} bytes",
                                  kMaxConfigFileBytes >> 20U, kMaxConfigFileBytes));
  }
  return std::move(*text);
}

}  // namespace shardsim::config
