// YAML text -> ConfigNode, the only place that includes yaml-cpp. Syntax errors, duplicate keys,
// too-deep nesting and unreadable files become ConfigErrors with file:line:col.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/config_node.hpp"

namespace shardsim::config {

// Files larger than this are rejected rather than parsed (no scenario needs megabytes).
inline constexpr std::size_t kMaxConfigFileBytes = 4U << 20U;

// Reads and parses a YAML file. `display_name` is how the file is named in messages.
[[nodiscard]] ConfigNode load_yaml_file(const std::filesystem::path& file);

// Parses YAML text; `where` is used for locations (file name, and the line/column offset of the
// text for one-line snippets such as a --set value).
[[nodiscard]] ConfigNode parse_yaml(std::string_view text, const Location& where);

}  // namespace shardsim::config
