// heatmap.svg: see plots.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sweep/plots.hpp"
#include "sweep/svg.hpp"

namespace shardsim::sweep {
namespace {

std::string dimension_value(const std::vector<std::string>& keys, const PointResult& r) {
  std::string out;
  for (std::size_t k = 0; k < keys.size(); ++k) out += (k == 0 ? "" : " / ") + value_of(r, keys[k]);
  return out;
}

std::string dimension_label(const std::vector<std::string>& keys) {
  std::string out;
  for (std::size_t k = 0; k < keys.size(); ++k) out += (k == 0 ? "" : " / ") + keys[k];
  return out;
}

std::size_t position(std::vector<std::string>& values, const std::string& v) {
  const auto it = std::find(values.begin(), values.end(), v);
  if (it != values.end()) return static_cast<std::size_t>(it - values.begin());
  values.push_back(v);
  return values.size() - 1;
}

// The two lines a cell shows, and its fill.
struct CellLook {
  std::string line1, line2, fill, tooltip;
};

}  // namespace

std::optional<Heatmap> build_heatmap(const std::vector<std::vector<std::string>>& dimensions, const std::vector<PointResult>& results,
                                     const Objective& objective) {
  std::vector<std::size_t> varied;
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    std::vector<std::string> seen;
    for (const auto& r : results) (void)position(seen, dimension_value(dimensions[d], r));
    if (seen.size() > 1) varied.push_back(d);
  }
  if (varied.empty()) return std::nullopt;
  Heatmap h;
  const bool two = varied.size() >= 2;
  const auto& xdim = dimensions[two ? varied[1] : varied[0]];
  h.x_label = dimension_label(xdim);
  if (two) h.y_label = dimension_label(dimensions[varied[0]]);
  h.folds_other_keys = varied.size() > 2;
  for (const auto& r : results) {
    (void)position(h.x_values, dimension_value(xdim, r));
    (void)position(h.y_values, two ? dimension_value(dimensions[varied[0]], r) : std::string());
  }
  h.cells.assign(h.y_values.size(), std::vector<Heatmap::Cell>(h.x_values.size()));
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    auto& cell = h.cells[position(h.y_values, two ? dimension_value(dimensions[varied[0]], r) : std::string())]
                        [position(h.x_values, dimension_value(xdim, r))];
    ++cell.points;
    if (!r.ok()) {
      ++cell.failed;
    } else if (r.oom()) {
      const double peak = r.number("peak_memory_bytes");
      cell.min_oom_peak = cell.oom == 0 ? peak : std::min(cell.min_oom_peak, peak);
      ++cell.oom;
    } else if (!cell.best || objective.better(objective.value(r), objective.value(results[*cell.best]))) {
      cell.best = i;
    }
  }
  return h;
}

std::string heatmap_svg(const Heatmap& h, const std::vector<PointResult>& results, const std::string& title, const Objective& objective) {
  constexpr double kFont = 13, kSmall = 11, kCellH = 46, kHeaderH = 22;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& row : h.cells) {
    for (const auto& c : row) {
      if (!c.best) continue;
      lo = std::min(lo, objective.value(results[*c.best]));
      hi = std::max(hi, objective.value(results[*c.best]));
    }
  }
  auto look = [&](const Heatmap::Cell& c) {
    if (c.best) {
      const auto& r = results[*c.best];
      const double v = objective.value(r);
      std::string tip;
      for (const auto& a : r.assignments) tip += (tip.empty() ? "" : "\n") + a;
      tip += fmt::format("\n{:.0f} tokens/s per GPU, step {}, {} of {} points fit", r.number("tokens_per_s_per_gpu"),
                         svg::seconds(r.number("step_time_s")), c.points - c.oom - c.failed, c.points);
      // Green for the best by the objective, red for the worst.
      const double badness = hi > lo ? (objective.higher_is_better() ? hi - v : v - lo) / (hi - lo) : 0.0;
      return CellLook{objective.format(v), fmt::format("{}, {}", svg::seconds(r.number("step_time_s")), svg::gib(r.number("peak_memory_bytes"))),
                      svg::ramp(badness), tip};
    }
    if (c.oom > 0)
      return CellLook{"OOM", fmt::format("min {}", svg::gib(c.min_oom_peak)), "#bdbdbd",
                      fmt::format("{} points, none fits in memory", c.points)};
    if (c.failed > 0) return CellLook{"failed", "", "#eeeeee", fmt::format("{} points, all failed (see results.csv)", c.points)};
    return CellLook{"-", "", "#ffffff", "no point has these values"};
  };

  double cell_w = 96;
  for (const auto& x : h.x_values) cell_w = std::max(cell_w, svg::text_width(x, 12) + 16);
  for (const auto& row : h.cells) {
    for (const auto& c : row) {
      const auto l = look(c);
      cell_w = std::max({cell_w, svg::text_width(l.line1, kFont) + 16, svg::text_width(l.line2, kSmall) + 16});
    }
  }
  double left = 24;
  for (const auto& y : h.y_values) left = std::max(left, svg::text_width(y, 12) + 24);
  left = std::max(left, svg::text_width(h.y_label, 12) + 24);
  constexpr double kTop = 86;
  const double nx = static_cast<double>(h.x_values.size());
  const double ny = static_cast<double>(h.y_values.size());
  const std::string subtitle =
      h.folds_other_keys
          ? fmt::format("each cell: the fitting point best by {} over the other swept keys; then step time, peak memory", objective.name())
          : fmt::format("each cell: {}, then step time and peak memory; green is best", objective.name());
  const double width = std::max({left + nx * cell_w + 20, svg::text_width(title, 15) + 40, svg::text_width(subtitle, 11) + 40});
  const double height = kTop + ny * kCellH + 40;

  std::string out =
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="12">)"
                  "\n",
                  width, height);
  out += fmt::format(R"(<text x="20" y="22" font-size="15">{}</text>)"
                     "\n",
                     svg::escape(title));
  out += fmt::format(R"(<text x="20" y="40" font-size="11" fill="#555">{}</text>)"
                     "\n",
                     svg::escape(subtitle));
  out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-weight="bold">{}</text>)"
                     "\n",
                     left + nx * cell_w / 2, kTop - kHeaderH - 6, svg::escape(h.x_label));
  if (!h.y_label.empty()) {
    out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end" font-weight="bold">{}</text>)"
                       "\n",
                       left - 8, kTop - 8, svg::escape(h.y_label));
  }
  for (std::size_t x = 0; x < h.x_values.size(); ++x) {
    out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)"
                       "\n",
                       left + (static_cast<double>(x) + 0.5) * cell_w, kTop - 8, svg::escape(h.x_values[x]));
  }
  for (std::size_t y = 0; y < h.y_values.size(); ++y) {
    const double top = kTop + static_cast<double>(y) * kCellH;
    out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)"
                       "\n",
                       left - 8, top + kCellH / 2 + 4, svg::escape(h.y_values[y]));
    for (std::size_t x = 0; x < h.x_values.size(); ++x) {
      const auto l = look(h.cells[y][x]);
      const double cx = left + static_cast<double>(x) * cell_w;
      out += fmt::format(
          R"(<g><title>{}</title><rect class="cell" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" stroke="#fff" stroke-width="2"/>)",
          svg::escape(l.tooltip), cx, top, cell_w, kCellH, l.fill);
      const double mid = cx + cell_w / 2;
      if (l.line2.empty()) {
        out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="{}">{}</text>)", mid, top + kCellH / 2 + 5, kFont,
                           svg::escape(l.line1));
      } else {
        out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="{}" font-weight="bold">{}</text>)", mid, top + 20,
                           kFont, svg::escape(l.line1));
        out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="{}" fill="#333">{}</text>)", mid, top + 36,
                           kSmall, svg::escape(l.line2));
      }
      out += "</g>\n";
    }
  }
  if (std::isfinite(lo)) {
    out += fmt::format(
        R"(<text x="20" y="{:.1f}" font-size="11" fill="#555">colour: step time from {} (green) to {} (red); grey: out of memory</text>)"
        "\n",
        height - 14, svg::escape(svg::seconds(lo)), svg::escape(svg::seconds(hi)));
  }
  return out + "</svg>\n";
}

}  // namespace shardsim::sweep
