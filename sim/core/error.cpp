#include "core/error.hpp"

#include <fmt/format.h>

namespace shardsim {

std::string Location::str() const {
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

namespace {
std::string render(const Location& where, const std::string& key_path, const std::string& message, std::string_view severity = "error") {
  std::string out = where.str();
  out += fmt::format("{}{}: ", out.empty() ? "" : ": ", severity);
  if (!key_path.empty()) out += key_path + ": ";
  return out + message;
}
}  // namespace

std::string ConfigWarning::str() const {
  return render(where, key_path, message, "warning");
}

ConfigError::ConfigError(const Location& where, const std::string& key_path, const std::string& message)
    : std::runtime_error(render(where, key_path, message)), where_(where), key_path_(key_path), message_(message) {}

std::string quote(std::string_view text) {
  constexpr std::size_t kMaxShown = 60;
  std::string out = "\"";
  std::size_t shown = 0;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (shown >= kMaxShown && (c & 0xC0U) != 0x80U) {  // never cut inside a UTF-8 sequence
      out += "...";
      break;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;  // printable ASCII and UTF-8 sequences pass through
    }
    ++shown;
  }
  return out + "\"";
}

}  // namespace shardsim
