// JSON text read strictly: a syntax error names file:line:column, and a key written twice in one
// object is an error (nlohmann keeps the last silently, so a config.json that sets a value twice
// would run with whichever came last). Shared by every JSON input: Hugging Face config.json, the
// exported graph, timelines, shardsim-bench results.
//
//   const nlohmann::json j = parse_json(text, "config.json", "a Hugging Face config.json");
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace shardsim {

// Throws ConfigError at the offending place: "invalid JSON: ...; expected EXPECTED", "duplicate
// key "x" (first at line 3)", "number out of range".
[[nodiscard]] nlohmann::json parse_json(std::string_view text, const std::string& file, std::string_view expected);

// Line and column (1-based) of a byte offset in `text`.
[[nodiscard]] Location json_location(const std::string& file, std::string_view text, std::size_t offset);

// Where the value at `path` ("info.world_size", "ops[3].end[1]") starts in `text`, which must be
// valid JSON; nullopt when there is no such value.
[[nodiscard]] std::optional<Location> json_path_location(const std::string& file, std::string_view text, std::string_view path);

// `e` with the line and column of its key path in `text`, when it names no line yet and the path
// is found: the errors of JsonFields become "graph.json:12:20: error: ops[3].unit: ...".
[[nodiscard]] ConfigError located(const ConfigError& e, std::string_view text);

// Typed reads of a parsed document that never let a value wrap or a library exception through:
// every mistake is a ConfigError naming the file and the key path (located() adds line:column).
class JsonFields {
 public:
  explicit JsonFields(std::string file) : file_(std::move(file)) {}

  [[nodiscard]] const nlohmann::json& field(const nlohmann::json& obj, std::string_view key, const std::string& path) const;
  [[nodiscard]] std::int64_t integer(const nlohmann::json& v, const std::string& path, std::int64_t min, std::int64_t max) const;
  [[nodiscard]] double number(const nlohmann::json& v, const std::string& path, double min, double max) const;
  [[nodiscard]] bool boolean(const nlohmann::json& v, const std::string& path) const;
  [[nodiscard]] std::string text(const nlohmann::json& v, const std::string& path) const;
  [[nodiscard]] const nlohmann::json& array(const nlohmann::json& v, const std::string& path) const;
  [[noreturn]] void fail(const std::string& path, const std::string& message) const;
  [[nodiscard]] const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// "ops[3]" + "unit" -> "ops[3].unit"; "" + "info" -> "info".
[[nodiscard]] std::string json_path(const std::string& parent, std::string_view key);

// Writing JSON as text, value by value, for outputs too large for a document in memory (a trace of
// millions of events: nlohmann's DOM takes some ten times the text's size).
// A number as JSON writes it: the shortest text that reads back the same double; null where not
// finite (JSON has no NaN or infinity).
void append_json_number(std::string& out, double v);
// A string quoted and escaped.
void append_json_string(std::string& out, std::string_view s);

}  // namespace shardsim
