// Pictures of a sweep, hand-written SVG and one HTML page (no plotting dependency), each ranking
// points by the sweep's objective (objective.hpp: tokens/s per GPU unless --objective says
// otherwise) and saying so:
//   heatmap.svg  the objective over the first two swept dimensions that take more than one
//                value (one row when only one does; not drawn when none does). A cell shows the
//                best point by the objective that fits in memory among the points with that pair
//                of values (the other swept keys vary inside the cell): its objective value, step
//                time and peak memory, coloured green (best) to red; "OOM" when none fits,
//                "failed" when none simulated.
//   pareto.svg   the objective against peak memory, one marker per simulated point: circles for
//                points that fit (filled on the Pareto frontier: no other point is both better
//                and smaller), crosses for points over their GPU's memory.
//   index.html   both pictures and a table of the best settings by the objective.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sweep/driver.hpp"
#include "sweep/objective.hpp"
#include "sweep/result.hpp"

namespace shardsim::sweep {

struct Heatmap {
  struct Cell {
    std::optional<std::size_t> best;  // index into the results of the best fitting point
    int points = 0;
    int oom = 0;
    int failed = 0;
    double min_oom_peak = 0;  // smallest peak memory among the cell's OOM points
  };
  std::string x_label, y_label;  // y_label empty: one row
  std::vector<std::string> x_values, y_values;
  std::vector<std::vector<Cell>> cells;  // cells[y][x]
  bool folds_other_keys = false;         // more swept dimensions than the two shown
};

// Nullopt when no swept dimension takes more than one value.
[[nodiscard]] std::optional<Heatmap> build_heatmap(const std::vector<std::vector<std::string>>& dimensions,
                                                   const std::vector<PointResult>& results, const Objective& objective = {});
[[nodiscard]] std::string heatmap_svg(const Heatmap& h, const std::vector<PointResult>& results, const std::string& title,
                                      const Objective& objective = {});

// Indices (into `results`) of the fitting points no other fitting point beats on both the
// objective and peak memory, by increasing memory. Of identical points the first is kept.
[[nodiscard]] std::vector<std::size_t> pareto_frontier(const std::vector<PointResult>& results, const Objective& objective = {});
[[nodiscard]] std::string pareto_svg(const std::vector<PointResult>& results, const std::string& title, const Objective& objective = {});

// Indices of the fitting points from the best by the objective (ties: by point), at most `n`.
[[nodiscard]] std::vector<std::size_t> best_points(const std::vector<PointResult>& results, std::size_t n, const Objective& objective = {});

[[nodiscard]] std::string index_html(const SweepSpec& spec, const std::vector<PointResult>& results, bool has_heatmap);

// Writes heatmap.svg (when there is one), pareto.svg and index.html into `dir`, atomically.
void write_pictures(const std::filesystem::path& dir, const SweepSpec& spec, const std::vector<PointResult>& results);

}  // namespace shardsim::sweep
