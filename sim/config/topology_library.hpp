// The topologies shardsim ships (topologies/*.yaml), which a scenario can name instead of giving a
// path: `cluster.topology: h100_sxm_8x_ib400`. They are looked up, in order, in the folders of
// SHARDSIM_TOPOLOGY_PATH (colon-separated), beside the running program as installed
// (<prefix>/bin/shardsim -> <prefix>/share/shardsim/topologies), and in the source tree the
// program was built from, so that `make install`ed scenarios and scenarios outside the source
// tree both work.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::config {

// Whether a cluster.topology value is a name (no folder, no .yaml) rather than a path.
[[nodiscard]] bool is_topology_name(std::string_view value);

// The folders searched, in order (existing ones only).
[[nodiscard]] std::vector<std::filesystem::path> topology_dirs();

// The file of a shipped topology, or nullopt.
[[nodiscard]] std::optional<std::filesystem::path> find_shipped_topology(std::string_view name);

// Every shipped topology's name, sorted, for messages and `shardsim describe topologies`.
[[nodiscard]] std::vector<std::string> shipped_topologies();

}  // namespace shardsim::config
