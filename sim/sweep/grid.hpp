// The points of a sweep: axes of values for dotted scenario keys, expanded into their product.
// A point is the scenario with one `--set KEY=VALUE` per swept key, so every value is checked by
// the scenario loader exactly like a value written in the file.
//
//   --grid fsdp.backward_prefetch=pre,post,none --grid fsdp.wrap.blocks_per_unit=1,2,4
//     -> 9 points, the last axis varying fastest:
//        [fsdp.backward_prefetch=pre, fsdp.wrap.blocks_per_unit=1], [... =pre, ... =2], ...
//
// Values are YAML (`{policy: size, min_params: 5e8}`, `[1, 2]`, `96GiB`); a list may continue
// with `...` to its last item when the items before it have a constant step or ratio:
// `1, 2, 4, ..., 128` (8 values), `2, 4, ..., 10` (5 values).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_node.hpp"

namespace shardsim::sweep {

// Grids larger than this are refused: no machine finishes them, and expanding them would take
// the memory instead.
inline constexpr std::size_t kMaxPoints = 1'000'000;
// A `...` range longer than this is certainly a typo in its end value.
inline constexpr std::size_t kMaxRangeValues = 10'000;

// One dimension of the grid: a key, or several keys advanced together (zipped).
struct Axis {
  std::vector<std::string> keys;
  // values[step][k]: canonical YAML text of keys[k]; empty leaves keys[k] as the scenario has it at
  // that step (a layout where the key does not apply, such as a pipeline schedule without pp).
  std::vector<std::vector<std::string>> values;
  Location where;  // for messages about the axis as a whole

  [[nodiscard]] std::size_t size() const { return values.size(); }
  [[nodiscard]] std::string label() const;                        // "training.micro_batch / training.grad_accum"
  [[nodiscard]] std::string value_label(std::size_t step) const;  // "2 / 4"
};

struct Point {
  std::size_t index = 0;                 // position in expansion order; results are sorted by it
  std::vector<std::string> assignments;  // "KEY=VALUE", canonical: the point's identity on resume
};

// "KEY=V1,V2,..." as given to --grid. Commas inside [], {} or quotes do not split.
// Throws ConfigError located at "--grid ...".
[[nodiscard]] Axis parse_grid_option(std::string_view text);

// Several "KEY=V1,V2,..." (--zip) advanced together: one axis. All must have as many values.
[[nodiscard]] Axis parse_zip_options(std::span<const std::string> texts);

// An axis from a YAML list (a sweep file's `grid:` entry); `...` items are expanded.
[[nodiscard]] Axis axis_from_list(const std::string& key, const ConfigNode& list, const Location& key_where);

// Zips axes of one key each into one axis; they must have the same length.
[[nodiscard]] Axis zip_axes(std::vector<Axis> axes, const Location& where);

// Number of points of the product; throws ConfigError past kMaxPoints or when a key is swept
// twice.
[[nodiscard]] std::size_t grid_size(std::span<const Axis> axes);

// The product of the axes in order, the last axis varying fastest. No axes: one point, the
// scenario as written.
[[nodiscard]] std::vector<Point> expand(std::span<const Axis> axes);

// A value as canonical one-line YAML: `{policy: size, min_params: 5e8}` whatever the spacing or
// quoting it was written with; parsing it again gives the same tree.
[[nodiscard]] std::string to_flow_yaml(const ConfigNode& node);

// "KEY=VALUE" -> ("KEY", "VALUE"); the value is everything after the first '='.
[[nodiscard]] std::pair<std::string, std::string> split_assignment(std::string_view assignment);

}  // namespace shardsim::sweep
