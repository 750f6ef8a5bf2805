// A sweep written down: the scenario, overrides for every point, and the grid, so that a sweep
// can be kept next to its results and run again.
//
//   scenario: ../scenarios/llama3.1-8b_8xh100.yaml   # relative to this file
//   set: {cluster.nodes: 8}                           # applied to every point
//   grid:                                             # every combination of these
//     fsdp.backward_prefetch: [pre, post, none]
//     cluster.nodes: [1, 2, 4, ..., 128]
//     fsdp.wrap: [{policy: module, module: block}, {policy: size, min_params: 5e8}]
//   zip:                                              # lists advanced together (one axis);
//     training.micro_batch: [1, 2, 4]                 # a mapping, or a list of mappings for
//     training.grad_accum: [4, 2, 1]                  # several zipped groups
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/config_node.hpp"
#include "core/param_spec.hpp"
#include "sweep/grid.hpp"

namespace shardsim::sweep {

struct SweepFile {
  std::filesystem::path scenario;
  std::vector<std::string> sets;  // "KEY=VALUE" for every point
  std::vector<Location> set_where;  // where each of `sets` is written
  std::vector<Axis> axes;         // grid entries in file order, then the zipped groups
};

// True when `root` looks like a sweep file (has scenario:, grid: or zip:, no cluster:) rather than a scenario.
[[nodiscard]] bool is_sweep_file(const ConfigNode& root);

// Throws ConfigError with file:line:col for anything malformed or unknown.
[[nodiscard]] SweepFile load_sweep_file(const std::filesystem::path& file);

// Keys of the sweep file, for `shardsim describe sweep`.
[[nodiscard]] Schema sweep_file_schema();

}  // namespace shardsim::sweep
