// JSON text read strictly: a syntax error names file:line:column, and a key written twice in one
// object is an error (nlohmann keeps the last silently, so a config.json that sets a value twice
// would run with whichever came last). Shared by every JSON input: Hugging Face config.json, the
// exported graph, timelines, shardsim-bench results.
//
//   const nlohmann::json j = parse_json(text, "config.json", "a Hugging Face config.json");
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace shardsim {

// Throws ConfigError at the offending place: "invalid JSON: ...; expected EXPECTED", "duplicate
// key "x" (first at line 3)", "number out of range".
[[nodiscard]] nlohmann::json parse_json(std::string_view text, const std::string& file, std::string_view expected);

// Line and column (1-based) of a byte offset in `text`.
[[nodiscard]] Location json_location(const std::string& file, std::string_view text, std::size_t offset);

}  // namespace shardsim
