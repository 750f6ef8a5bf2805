// Overrides by dotted key: `--set fsdp.backward_prefetch=post` on the command line and
// `cluster.overrides: {gpu.memory: 96GiB}` in a scenario both edit a ConfigNode tree before it
// is validated, so an overridden value is checked exactly like one written in the file.
#pragma once

#include <string_view>
#include <vector>

#include "core/config_node.hpp"

namespace shardsim::config {

// Sets root[a][b][c] = value for key "a.b.c", creating mappings on the way.
void set_dotted(ConfigNode& root, std::string_view dotted_key, ConfigNode value, const Location& key_where);

// Applies one "KEY=VALUE" assignment; VALUE is parsed as YAML ("[1, 2]", "96GiB", "{policy: none}").
void apply_assignment(ConfigNode& root, std::string_view assignment);

// Flattens a mapping of overrides into (dotted key, value) pairs: {gpu: {memory: x}} and
// {gpu.memory: x} both give ("gpu.memory", x).
struct DottedValue {
  std::string key;
  Location key_where;
  ConfigNode value;
};
[[nodiscard]] std::vector<DottedValue> flatten_overrides(const ConfigNode& overrides, const std::string& path);

// Lays `overlay` over `base` (a file over the file it extends): mappings merge key by key, any
// other value replaces the base's. Values keep the location they were written at, so an error
// in an inherited value is reported in the file that holds it.
void merge_into(ConfigNode& base, ConfigNode overlay);

}  // namespace shardsim::config
