#include "core/json_text.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <vector>

namespace shardsim {
namespace {

// Scans text nlohmann has already accepted for a key written twice in one object. Strings are
// skipped with their escapes; a string followed by ':' is a key of the innermost open object.
void check_duplicate_keys(std::string_view text, const std::string& file) {
  std::vector<std::map<std::string_view, std::size_t>> objects;  // open objects: key -> offset
  std::vector<bool> is_object;                                   // open brackets: { or [
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
        throw ConfigError(
            json_location(file, text, start), std::string(key),
            fmt::format("duplicate key (first at line {}, column {}); expected each key once per object", first.line, first.column));
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

namespace {

void skip_ws(std::string_view t, std::size_t& i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) ++i;
}

// Past the string starting at t[i] (a quote); returns its raw contents.
std::string_view skip_string(std::string_view t, std::size_t& i) {
  const std::size_t start = ++i;
  while (i < t.size() && t[i] != '"') i += t[i] == '\\' ? 2 : 1;
  const std::string_view raw = t.substr(start, i - start);
  ++i;
  return raw;
}

void skip_value(std::string_view t, std::size_t& i) {
  skip_ws(t, i);
  if (i >= t.size()) return;
  if (t[i] == '"') {
    (void)skip_string(t, i);
    return;
  }
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    while (i < t.size()) {
      if (t[i] == '"') {
        (void)skip_string(t, i);
        continue;
      }
      if (t[i] == '{' || t[i] == '[') ++depth;
      if (t[i] == '}' || t[i] == ']') {
        --depth;
        if (depth == 0) {
          ++i;
          return;
        }
      }
      ++i;
    }
    return;
  }
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != ' ' && t[i] != '\n' && t[i] != '\r' && t[i] != '\t') ++i;
}

}  // namespace

std::optional<Location> json_path_location(const std::string& file, std::string_view text, std::string_view path) {
  std::size_t i = 0;
  skip_ws(text, i);
  std::string_view rest = path;
  while (!rest.empty()) {
    if (rest.front() == '.') rest.remove_prefix(1);
    if (rest.front() == '[') {
      const auto close = rest.find(']');
      if (close == std::string_view::npos) return std::nullopt;
      const std::size_t index = std::stoul(std::string(rest.substr(1, close - 1)));
      rest.remove_prefix(close + 1);
      skip_ws(text, i);
      if (i >= text.size() || text[i] != '[') return std::nullopt;
      ++i;
      for (std::size_t k = 0; k < index; ++k) {
        skip_value(text, i);
        skip_ws(text, i);
        if (i >= text.size() || text[i] != ',') return std::nullopt;
        ++i;
      }
      skip_ws(text, i);
      continue;
    }
    const auto end = rest.find_first_of(".[");
    const std::string_view key = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    skip_ws(text, i);
    if (i >= text.size() || text[i] != '{') return std::nullopt;
    ++i;
    bool found = false;
    while (!found) {
      skip_ws(text, i);
      if (i >= text.size() || text[i] != '"') return std::nullopt;
      const std::string_view k = skip_string(text, i);
      skip_ws(text, i);
      if (i >= text.size() || text[i] != ':') return std::nullopt;
      ++i;
      skip_ws(text, i);
      if (k == key) {
        found = true;
        break;
      }
      skip_value(text, i);
      skip_ws(text, i);
      if (i >= text.size() || text[i] != ',') return std::nullopt;
      ++i;
    }
  }
  skip_ws(text, i);
  return json_location(file, text, i);
}

ConfigError located(const ConfigError& e, std::string_view text) {
  if (e.where().line > 0) return e;
  // A missing key has no place of its own: then the object that should hold it.
  std::string path = e.key_path();
  while (true) {
    try {
      if (auto at = json_path_location(e.where().file, text, path)) return ConfigError(*at, e.key_path(), e.message());
    } catch (const std::exception&) {
      return e;
    }
    const auto cut = path.find_last_of(".[");
    if (cut == std::string::npos || cut == 0) return e;
    path.resize(cut);
  }
}

std::string json_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

void append_json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}", v);
}

void append_json_string(std::string& out, std::string_view s) {
  // Bytes that are not UTF-8 (a YAML name can carry them) become U+FFFD rather than an exception.
  out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void JsonFields::fail(const std::string& path, const std::string& message) const {
  throw ConfigError(Location{file_, 0, 0}, path, message);
}

const nlohmann::json& JsonFields::field(const nlohmann::json& obj, std::string_view key, const std::string& path) const {
  if (!obj.is_object()) fail(path, fmt::format("expected an object; got {}", obj.type_name()));
  const auto it = obj.find(key);
  if (it == obj.end()) fail(json_path(path, key), "missing");
  return *it;
}

std::int64_t JsonFields::integer(const nlohmann::json& v, const std::string& path, std::int64_t min, std::int64_t max) const {
  // Values past 2^63 - 1 (nlohmann keeps them unsigned) and out of range are refused, never wrapped.
  std::int64_t value = 0;
  bool ok = false;
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    ok = u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    value = static_cast<std::int64_t>(u);
  } else if (v.is_number_integer()) {
    ok = true;
    value = v.get<std::int64_t>();
  }
  if (!ok || value < min || value > max) fail(path, fmt::format("expected an integer from {} to {}; got {}", min, max, v.dump()));
  return value;
}

double JsonFields::number(const nlohmann::json& v, const std::string& path, double min, double max) const {
  if (!v.is_number() || !(v.get<double>() >= min && v.get<double>() <= max)) {
    fail(path, fmt::format("expected a number from {:g} to {:g}; got {}", min, max, v.dump()));
  }
  return v.get<double>();
}

bool JsonFields::boolean(const nlohmann::json& v, const std::string& path) const {
  if (!v.is_boolean()) fail(path, fmt::format("expected true or false; got {}", v.dump()));
  return v.get<bool>();
}

std::string JsonFields::text(const nlohmann::json& v, const std::string& path) const {
  if (!v.is_string()) fail(path, fmt::format("expected a string; got {}", v.dump()));
  return v.get<std::string>();
}

const nlohmann::json& JsonFields::array(const nlohmann::json& v, const std::string& path) const {
  if (!v.is_array()) fail(path, fmt::format("expected a list; got {}", v.type_name()));
  return v;
}

}  // namespace shardsim
