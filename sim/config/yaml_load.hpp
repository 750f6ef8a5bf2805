// YAML text -> ConfigNode, the only place that includes yaml-cpp. Syntax errors, duplicate keys,
// binary or non-UTF-8 text, too-deep nesting, aliases that expand without bound and unreadable
// files become ConfigErrors with file:line:col.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "config/file_source.hpp"
#include "core/config_node.hpp"

namespace shardsim::config {

// Mappings and lists nest at most this deep (a scenario needs 4 levels).
inline constexpr int kMaxYamlDepth = 32;
// At most this many values after aliases are expanded (a scenario has about a hundred): a few
// lines of nested aliases ("billion laughs") would otherwise expand into billions.
inline constexpr std::size_t kMaxYamlValues = 100'000;

// Reads and parses a YAML file from disk; errors name the file as given.
[[nodiscard]] ConfigNode load_yaml_file(const std::filesystem::path& file);

// Reads and parses a YAML file through `source`; a missing file is reported at `ref` when given.
[[nodiscard]] ConfigNode load_yaml_file(const std::filesystem::path& file, const FileSource& source, const std::optional<FileRef>& ref);

// Parses YAML text; `where` is used for locations (file name, and the line/column offset of the
// text for one-line snippets such as a --set value).
[[nodiscard]] ConfigNode parse_yaml(std::string_view text, const Location& where);

// Throws ConfigError at the first byte that cannot be in a YAML file: a control character other
// than tab, newline and carriage return (binary data), or a byte that is not valid UTF-8.
void check_text(std::string_view text, const Location& where, std::string_view expected);

}  // namespace shardsim::config
