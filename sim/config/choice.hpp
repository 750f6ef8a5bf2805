// A replaceable part named in YAML (a wrap policy, a fabric kind, a collective algorithm):
// its name, where it was written, and its own settings, which the layer that implements the
// part checks against that implementation's schema.
#pragma once

#include <string>

#include "core/config_node.hpp"

namespace shardsim::config {

struct Choice {
  std::string name;
  std::string path;     // dotted key path, e.g. "fsdp.wrap"
  Location where;       // of the name
  ConfigNode settings;  // the mapping, including the name key itself; null when written as a bare name
};

}  // namespace shardsim::config
