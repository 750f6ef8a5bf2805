// Pictures of a sweep, hand-written SVG and one HTML page (no plotting dependency):
//   heatmap.svg  step time over the first two swept dimensions that take more than one value
//                (one row when only one does; not drawn when none does). A cell shows the point
//                with the highest tokens/s per GPU that fits in memory among the points with
//                that pair of values (the other swept keys vary inside the cell): its step time
//                and peak memory; "OOM" when none fits, "failed" when none simulated.
//   pareto.svg   step time against peak memory, one marker per simulated point: circles for
//                points that fit (filled on the Pareto frontier: no other point is both faster
//                and smaller), crosses for points over their GPU's memory.
//   index.html   both pictures and a table of the best settings by tokens/s per GPU.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sweep/driver.hpp"
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
                                                   const std::vector<PointResult>& results);
[[nodiscard]] std::string heatmap_svg(const Heatmap& h, const std::vector<PointResult>& results, const std::string& title);

// Indices (into `results`) of the fitting points no other fitting point beats on both step time
// and peak memory, by increasing memory. Of identical points the first is kept.
[[nodiscard]] std::vector<std::size_t> pareto_frontier(const std::vector<PointResult>& results);
[[nodiscard]] std::string pareto_svg(const std::vector<PointResult>& results, const std::string& title);

// Indices of the fitting points by decreasing tokens/s per GPU (ties: by point), at most `n`.
[[nodiscard]] std::vector<std::size_t> best_points(const std::vector<PointResult>& results, std::size_t n);

[[nodiscard]] std::string index_html(const SweepSpec& spec, const std::vector<PointResult>& results, bool has_heatmap);

// Writes heatmap.svg (when there is one), pareto.svg and index.html into `dir`, atomically.
void write_pictures(const std::filesystem::path& dir, const SweepSpec& spec, const std::vector<PointResult>& results);

}  // namespace shardsim::sweep
