#include "core/error.hpp"

#include <fmt/format.h>

namespace shardsim {

std::string Location::str() const {
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

namespace {
std::string render(const Location& where, const std::string& key_path, const std::string& message) {
  std::string out = where.str();
  out += out.empty() ? "error: " : ": error: ";
  if (!key_path.empty()) out += key_path + ": ";
  return out + message;
}
}  // namespace

ConfigError::ConfigError(const Location& where, const std::string& key_path, const std::string& message)
    : std::runtime_error(render(where, key_path, message)), where_(where), key_path_(key_path), message_(message) {}

}  // namespace shardsim
