// --shard I/N: a deterministic share of a sweep's points, for job arrays (Slurm, PBS) where
// each task runs one share. Shares are round-robin over the points' grid order, so every point
// is in exactly one share and neighbouring points (often of similar cost) are spread out.
//
//   shardsim sweep s.yaml --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT --out DIR
//   (with --array=0-7; afterwards the same command without --shard merges, see driver.hpp)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sweep/grid.hpp"

namespace shardsim::sweep {

struct Shard {
  std::size_t index = 0;  // 0 <= index < count
  std::size_t count = 1;

  [[nodiscard]] bool whole() const { return count == 1; }
  [[nodiscard]] bool contains(std::size_t point_index) const { return point_index % count == index; }
  [[nodiscard]] std::string dir_name() const;  // "shard-3-of-8"
};

// "I/N" with 0 <= I < N. Throws ConfigError located at "--shard ...".
[[nodiscard]] Shard parse_shard(std::string_view text);

// The points of `all` in this shard, in order.
[[nodiscard]] std::vector<Point> shard_points(const std::vector<Point>& all, const Shard& shard);

}  // namespace shardsim::sweep
