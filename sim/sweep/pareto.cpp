// pareto.svg and the ranking of points: see plots.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "sweep/plots.hpp"
#include "sweep/svg.hpp"

namespace shardsim::sweep {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string tooltip(const PointResult& r, const Objective& objective) {
  std::string tip;
  for (const auto& a : r.assignments) tip += (tip.empty() ? "" : "\n") + a;
  if (tip.empty()) tip = "the scenario as written";
  return tip + fmt::format("\n{}, step {}, {}{}", objective.format(objective.value(r)), svg::seconds(r.number("step_time_s")),
                           svg::gib(r.number("peak_memory_bytes")), r.oom() ? " (out of memory)" : "");
}

}  // namespace

std::vector<std::size_t> pareto_frontier(const std::vector<PointResult>& results, const Objective& objective) {
  std::vector<std::size_t> fit;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].fits()) fit.push_back(i);
  }
  std::sort(fit.begin(), fit.end(), [&](std::size_t a, std::size_t b) {
    const double ma = results[a].number("peak_memory_bytes"), mb = results[b].number("peak_memory_bytes");
    if (ma != mb) return ma < mb;
    const double ta = objective.value(results[a]), tb = objective.value(results[b]);
    if (ta != tb) return objective.better(ta, tb);
    return a < b;
  });
  std::vector<std::size_t> out;
  for (std::size_t i : fit) {
    const double v = objective.value(results[i]);
    if (out.empty() || objective.better(v, objective.value(results[out.back()]))) out.push_back(i);
  }
  return out;
}

std::vector<std::size_t> best_points(const std::vector<PointResult>& results, std::size_t n, const Objective& objective) {
  std::vector<std::size_t> fit;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].fits()) fit.push_back(i);
  }
  std::stable_sort(fit.begin(), fit.end(), [&](std::size_t a, std::size_t b) {
    return objective.better(objective.value(results[a]), objective.value(results[b]));
  });
  if (fit.size() > n) fit.resize(n);
  return fit;
}

std::string pareto_svg(const std::vector<PointResult>& results, const std::string& title, const Objective& objective) {
  constexpr double W = 760, H = 480, left = 80, right = 30, top = 60, bottom = 60;
  const double pw = W - left - right, ph = H - top - bottom;
  std::vector<std::size_t> shown;
  double mem_max = 0, t_lo = std::numeric_limits<double>::infinity(), t_hi = 0;
  std::optional<double> capacity;
  bool one_capacity = true;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r.ok() || !std::isfinite(objective.value(r)) || !std::isfinite(r.number("peak_memory_bytes"))) continue;
    shown.push_back(i);
    mem_max = std::max(mem_max, r.number("peak_memory_bytes"));
    t_lo = std::min(t_lo, objective.value(r));
    t_hi = std::max(t_hi, objective.value(r));
    const double cap = r.allocator_memory();
    if (capacity && *capacity != cap) one_capacity = false;
    capacity = cap;
  }
  if (capacity && one_capacity && std::isfinite(*capacity)) mem_max = std::max(mem_max, *capacity);
  const double x_hi = std::max(mem_max, 1.0) / kGiB * 1.05;
  if (shown.empty()) {
    t_lo = 0;
    t_hi = 1;
  }
  const double pad = t_hi > t_lo ? (t_hi - t_lo) * 0.08 : std::max(t_hi * 0.1, 1e-6);
  const double y_lo = std::max(0.0, t_lo - pad), y_hi = t_hi + pad;
  auto x = [&](double bytes) { return left + pw * (bytes / kGiB) / x_hi; };
  auto y = [&](double s) { return top + ph * (1.0 - (s - y_lo) / (y_hi - y_lo)); };

  std::string out =
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="12">)"
                  "\n",
                  W, H);
  out += fmt::format(R"(<text x="20" y="24" font-size="15">{}</text>)"
                     "\n",
                     svg::escape(title));
  out += fmt::format(
      R"(<text x="20" y="42" font-size="11" fill="#555">filled: Pareto frontier (no other point is both better by {} and smaller); x: out of memory (over what the GPU leaves to PyTorch); {} is better</text>)"
      "\n",
      svg::escape(objective.name()), objective.higher_is_better() ? "up" : "down");
  for (double g : svg::ticks(0, x_hi, 6)) {
    out += fmt::format(
        R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#e5e5e5"/><text x="{0:.1f}" y="{3}" text-anchor="middle">{4:g}</text>)"
        "\n",
        x(g * kGiB), top, top + ph, top + ph + 18, g);
  }
  for (double s : svg::ticks(y_lo, y_hi, 6)) {
    out += fmt::format(
        R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#e5e5e5"/><text x="{3}" y="{4:.1f}" text-anchor="end">{5:g}</text>)"
        "\n",
        left, y(s), left + pw, left - 6, y(s) + 4, s);
  }
  out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)"
                     "\n",
                     left, top, pw, ph);
  out += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">peak reserved memory (GiB, max over ranks)</text>)"
                     "\n",
                     left + pw / 2, H - 16);
  out += fmt::format(R"svg(<text transform="translate(20 {}) rotate(-90)" text-anchor="middle">{}{}</text>)svg"
                     "\n",
                     top + ph / 2, svg::escape(objective.name()), objective.kind() == Objective::Kind::throughput ? "" : " (s)");
  if (capacity && one_capacity && std::isfinite(*capacity)) {
    out += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#c00" stroke-dasharray="6,4" stroke-width="2"/>)"
                       R"(<text x="{3:.1f}" y="{4}" fill="#c00" text-anchor="end">left to PyTorch {5}</text>)"
                       "\n",
                       x(*capacity), top, top + ph, x(*capacity) - 4, top + 14, svg::escape(svg::gib(*capacity)));
  }
  const auto frontier = pareto_frontier(results, objective);
  if (frontier.size() > 1) {
    std::string pts;
    for (std::size_t k = 0; k < frontier.size(); ++k) {
      const auto& r = results[frontier[k]];
      if (k > 0) pts += fmt::format("{:.1f},{:.1f} ", x(r.number("peak_memory_bytes")), y(objective.value(results[frontier[k - 1]])));
      pts += fmt::format("{:.1f},{:.1f} ", x(r.number("peak_memory_bytes")), y(objective.value(r)));
    }
    out += fmt::format(R"(<polyline class="frontier-line" points="{}" fill="none" stroke="#4e79a7" stroke-width="1.5"/>)"
                       "\n",
                       pts);
  }
  for (std::size_t i : shown) {
    const auto& r = results[i];
    const double cx = x(r.number("peak_memory_bytes")), cy = y(objective.value(r));
    const bool on_frontier = std::find(frontier.begin(), frontier.end(), i) != frontier.end();
    if (r.oom()) {
      out += fmt::format(
          R"(<path class="oom" d="M{0:.1f} {1:.1f}L{2:.1f} {3:.1f}M{0:.1f} {3:.1f}L{2:.1f} {1:.1f}" stroke="#c00" stroke-width="2"><title>{4}</title></path>)"
          "\n",
          cx - 4, cy - 4, cx + 4, cy + 4, svg::escape(tooltip(r, objective)));
    } else {
      out += fmt::format(
          R"(<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="{}" fill="{}" stroke="#4e79a7" stroke-width="1.5"><title>{}</title></circle>)"
          "\n",
          on_frontier ? "point frontier" : "point", cx, cy, on_frontier ? 5.5 : 4, on_frontier ? "#4e79a7" : "none",
          svg::escape(tooltip(r, objective)));
    }
  }
  if (shown.empty()) {
    out += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">no point was simulated</text>)"
                       "\n",
                       left + pw / 2, top + ph / 2);
  }
  return out + "</svg>\n";
}

}  // namespace shardsim::sweep
