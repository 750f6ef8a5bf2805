#include "core/json_text.hpp"

#include <fmt/format.h>

#include <map>
#include <vector>

namespace shardsim {
namespace {

// Scans text nlohmann has already accepted for a key written twice in one object. Strings are
// skipped with their escapes; a string followed by ':' is a key of the innermost open object.
void check_duplicate_keys(std::string_view text, const std::string& file) {
  std::vector<std::map<std::string_view, std::size_t>> objects;  // open objects: key -> offset
  std::vector<bool> is_object;                                    // open brackets: { or [
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '[') {
      is_object.push_back(c == '{');
      if (c == '{') objects.emplace_back();
    } else if (c == '}' || c == ']') {
      if (!is_object.empty() && is_object.back()) objects.pop_back();
      if (!is_object.empty()) is_object.pop_back();
    } else if (c == '"') {
      const std::size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      std::size_t after = i + 1;
      while (after < text.size() && (text[after] == ' ' || text[after] == '\t' || text[after] == '\n' || text[after] == '\r')) ++after;
      if (after >= text.size() || text[after] != ':' || objects.empty() || is_object.empty() || !is_object.back()) continue;
      const std::string_view key = text.substr(start + 1, i - start - 1);
      const auto [it, inserted] = objects.back().emplace(key, start);
      if (!inserted) {
        const Location first = json_location(file, text, it->second);
        throw ConfigError(json_location(file, text, start), std::string(key),
                          fmt::format("duplicate key (first at line {}, column {}); expected each key once per object", first.line,
                                      first.column));
      }
    }
  }
}

}  // namespace

Location json_location(const std::string& file, std::string_view text, std::size_t offset) {
  Location l{file, 1, 1};
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++l.line;
      l.column = 1;
    } else {
      ++l.column;
    }
  }
  return l;
}

nlohmann::json parse_json(std::string_view text, const std::string& file, std::string_view expected) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ...":
    // the place goes into ours, the rest is the message.
    const std::string what = e.what();
    const auto colon = what.find(": ");
    const std::string message = colon == std::string::npos ? what : what.substr(colon + 2);
    throw ConfigError(json_location(file, text, e.byte > 0 ? e.byte - 1 : 0), "",
                      fmt::format("invalid JSON (expected {}): {}", expected, message));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double (1e999): nlohmann names the token but not where it is.
    const std::string what = e.what();
    const auto q = what.find('\'');
    const std::string token = q == std::string::npos ? std::string() : what.substr(q + 1, what.rfind('\'') - q - 1);
    const std::size_t at = token.empty() ? std::string_view::npos : text.find(token);
    throw ConfigError(json_location(file, text, at == std::string_view::npos ? 0 : at), "",
                      fmt::format("invalid JSON: number out of range: {}", quote(token)));
  }
  check_duplicate_keys(text, file);
  return j;
}

}  // namespace shardsim
