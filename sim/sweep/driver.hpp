// A sweep from start to finish: skip the points an earlier run finished, run the others on an
// Executor, stream each result to disk as it arrives, then write the sorted tables and the
// pictures.
//
// Files in the output directory DIR:
//   sweep.json            what the sweep is (scenario digest, --set, points); a second run with
//                         other arguments is refused rather than mixed in
//   results.jsonl / .csv  one line per point, appended and fsync'ed as points finish, so a sweep
//                         killed at any moment loses no finished point; rewritten sorted by
//                         point (byte-identical whatever -j or MPI layout) when the sweep ends
//   heatmap.svg, pareto.svg, index.html   see plots.hpp (written by a whole sweep, not a shard)
//   shard-I-of-N/results.*                what `--shard I/N` runs write instead of results.*
//
// Resume: every results.jsonl under DIR (its own and the shards') counts as finished points; a
// line cut short by a kill is ignored (the point runs again). So a sweep without --shard, run
// after its shards, merges them and runs whatever they left out.
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sweep/executor.hpp"
#include "sweep/grid.hpp"
#include "sweep/objective.hpp"
#include "sweep/shard.hpp"

namespace shardsim::sweep {

struct SweepSpec {
  std::filesystem::path scenario;
  std::vector<std::string> sets;                     // "KEY=VALUE" for every point, before its own
  std::vector<std::vector<std::string>> dimensions;  // swept keys, grouped as axes (zipped together)
  std::vector<Point> points;                         // every point of the sweep, by index
  Shard shard;                                       // which of them this run is for
  std::optional<std::filesystem::path> out;          // DIR; none: results stay in memory
  bool retry_failed = false;                         // run again points recorded as failed
  Objective objective;                               // what the pictures rank by (--objective)
};

// The dimensions of a product grid.
[[nodiscard]] std::vector<std::vector<std::string>> dimensions_of(std::span<const Axis> axes);

// Loads the scenario with `sets` and, one axis at a time, each value of that axis (the other
// axes at their first value): a typo in a key or value fails here, before anything runs, with
// the loader's file:line:col message; `set_where[i]`, where given, is where sets[i] was written
// (a sweep file's set: entry). Throws ConfigError.
// With `only_axis_keys` (tune, whose axes it writes itself) an error about another key is let
// through: the value is well formed but does not combine with the scenario (no_shard beside a
// float8 all-gather), and the points with it fail on their own with that reason.
void check_axes(const std::filesystem::path& scenario, std::span<const std::string> sets, std::span<const Axis> axes,
                std::span<const Location> set_where = {}, bool only_axis_keys = false);

// Told about each finished point (progress.hpp draws the bar).
class SweepObserver {
 public:
  virtual ~SweepObserver() = default;
  virtual void started(std::size_t to_run, std::size_t already_done) = 0;
  virtual void finished(const PointResult& r) = 0;
  virtual void ended() = 0;
};

struct SweepOutcome {
  std::vector<PointResult> results;  // of this run's points (its shard), sorted by index
  std::size_t reused = 0;            // finished by an earlier run
  std::size_t ran = 0;               // run now
  [[nodiscard]] std::size_t failed() const;
};

// Runs the sweep. Throws ConfigError when DIR holds a different sweep, RuntimeError when files
// cannot be written.
[[nodiscard]] SweepOutcome run_sweep(const SweepSpec& spec, Executor& executor, SweepObserver* observer);

}  // namespace shardsim::sweep
