// Where configuration files come from. shardsim reads them from disk; tests and the fuzzer
// (tests/fuzz/) hand over files held in memory, so that a scenario, the topology it names, the
// topologies that one extends and a Hugging Face config.json load without touching the disk,
// through exactly the code that loads them from disk.
//
//   config::MemoryFiles files;
//   files.add("topo.yaml", "name: ...");
//   auto s = config::load_scenario("scenario.yaml", {}, files);   // after files.add("scenario.yaml", ...)
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace shardsim::config {

// Files larger than this are rejected rather than read (no configuration file needs megabytes).
inline constexpr std::size_t kMaxConfigFileBytes = 4U << 20U;

// Contract: read() returns the file's bytes, or nullopt with `error` set to a short reason
// ("no such file", "is a directory", "Permission denied"). It reads at most `limit` + 1 bytes, so
// that a caller can tell a file over the limit without reading all of it. It never throws.
class FileSource {
 public:
  virtual ~FileSource() = default;
  [[nodiscard]] virtual std::optional<std::string> read(const std::filesystem::path& file, std::size_t limit, std::string& error) const = 0;
};

class DiskFiles final : public FileSource {
 public:
  [[nodiscard]] std::optional<std::string> read(const std::filesystem::path& file, std::size_t limit, std::string& error) const override;
};

// Files by name, compared after lexical normalisation ("a/../topo.yaml" is "topo.yaml").
class MemoryFiles final : public FileSource {
 public:
  void add(const std::filesystem::path& file, std::string text);
  [[nodiscard]] std::optional<std::string> read(const std::filesystem::path& file, std::size_t limit, std::string& error) const override;

 private:
  std::map<std::string, std::string> files_;
};

// The key that named a file (`cluster.topology`, `extends`, `model.hf_config`): a file that
// cannot be read is reported there. Files named on the command line have no reference.
struct FileRef {
  Location where;
  std::string key_path;
};

// Reads a configuration file through `source`. Throws ConfigError: at `ref` when the file is
// missing or unreadable ("no such file: topologies/x.yaml"), at the file itself when it is over
// kMaxConfigFileBytes.
[[nodiscard]] std::string read_config_file(const FileSource& source, const std::filesystem::path& file, const std::optional<FileRef>& ref);

}  // namespace shardsim::config
