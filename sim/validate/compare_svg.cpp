// The SVG of `shardsim compare`: two timelines one above the other on a shared time axis, one row
// per stream, colour by class (compute, all-gather, reduce-scatter, all-reduce, other).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

#include "core/xml.hpp"
#include "validate/compare.hpp"

namespace shardsim::validate {
namespace {

constexpr double kLeft = 150;  // room for lane names
constexpr double kWidth = 1000;
constexpr double kRow = 18;
constexpr std::array<const char*, kActivityClasses> kColours{"#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2", "#72b7b2", "#9d9d9d"};


// Lanes in display order: compute first, then by compute time.
std::vector<std::string> lanes_of(const Trace& t, const std::vector<Activity>& acts) {
  std::map<std::string, double> compute_share;
  for (const auto& a : acts) compute_share[t.lane_of(a)] += a.cls == ActivityClass::compute ? a.end - a.start : 0.0;
  std::vector<std::string> lanes;
  for (const auto& [l, v] : compute_share) lanes.push_back(l);
  std::stable_sort(lanes.begin(), lanes.end(), [&](const std::string& a, const std::string& b) {
    if ((a == "compute") != (b == "compute")) return a == "compute";
    return compute_share[a] > compute_share[b];
  });
  return lanes;
}

// The index of the step numbered `number` in a rank's steps (it is there: compare() chose it).
std::size_t step_index(const RankTrace& r, int number) {
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    if (r.steps[i].number == number) return i;
  }
  return r.steps.size() - 1;
}

// Draws one step of one trace's rank from y; returns the height used.
double draw(std::string& out, const char* title, const Trace& t, std::size_t rank, const StepMetrics& m, double scale, double y) {
  out += fmt::format(R"(<text x="8" y="{:.1f}" font-weight="bold">{}: {}, step {} ({:.3f} ms)</text>)", y + 14, title, xml_escape(t.origin),
                     m.number, m.step_time * 1e3);
  out += "\n";
  y += 22;
  const auto step = static_cast<int>(step_index(t.ranks[rank], m.number));
  std::vector<Activity> acts;
  for (const auto& a : t.ranks[rank].activities) {
    if (a.step == step) acts.push_back(a);
  }
  const auto lanes = lanes_of(t, acts);
  for (std::size_t l = 0; l < lanes.size(); ++l) {
    const double ly = y + static_cast<double>(l) * kRow;
    out += fmt::format(R"(<text x="8" y="{:.1f}" font-size="11">{}</text>)", ly + 12, xml_escape(lanes[l]));
    out += fmt::format(R"(<rect x="{}" y="{:.1f}" width="{}" height="{}" fill="#f4f4f4"/>)", kLeft, ly, kWidth, kRow - 2);
    out += "\n";
    std::vector<const Activity*> mine;
    for (const auto& a : acts) {
      if (t.lane_of(a) == lanes[l]) mine.push_back(&a);
    }
    std::sort(mine.begin(), mine.end(), [](const Activity* a, const Activity* b) { return a->start < b->start; });
    // Runs of boxes narrower than a pixel, of one class and less than half a pixel apart, become
    // one box: kernel traces hold 1e5 kernels. Wider boxes are drawn one by one.
    auto px = [&](double seconds) { return seconds * scale; };
    for (std::size_t i = 0; i < mine.size();) {
      const Activity& first = *mine[i];
      double end = first.end;
      std::size_t j = i + 1;
      while (j < mine.size() && px(end - first.start) < 1 && px(mine[j]->end - mine[j]->start) < 1 && mine[j]->cls == first.cls &&
             px(mine[j]->start - end) < 0.5) {
        end = std::max(end, mine[j++]->end);
      }
      const double x = kLeft + std::max(0.0, first.start - m.window_start) * scale;
      const double w = std::max(0.5, (std::min(end, m.window_end) - std::max(first.start, m.window_start)) * scale);
      out += fmt::format(
          R"(<rect x="{:.2f}" y="{:.1f}" width="{:.2f}" height="{}" fill="{}" stroke="white" stroke-width="0.5"><title>{}{} {:.3f} ms</title></rect>)",
          x, ly, w, kRow - 2, kColours[static_cast<std::size_t>(first.cls)], xml_escape(t.name_of(first)),
          j - i > 1 ? fmt::format(" (+{} more)", j - i - 1) : "", (end - first.start) * 1e3);
      out += "\n";
      i = j;
    }
  }
  return 22 + static_cast<double>(lanes.size()) * kRow + 12;
}

// The smallest of 1, 2, 5 x 10^k that cuts `span` into at most ten ticks.
double nice_tick(double span) {
  for (double p = 1e-6; p < 1e12; p *= 10) {
    for (double step : {1.0, 2.0, 5.0}) {
      if (span / (step * p) <= 10) return step * p;
    }
  }
  return span;
}

}  // namespace

std::string comparison_svg(const Trace& sim, const Trace& meas, const Comparison& c) {
  const StepMetrics& drawn = c.measured_steps[c.drawn];
  StepMetrics simulated = c.simulated;
  if (!sim.has_op_ids) simulated = step_metrics(sim, sim.index_of(c.rank).value_or(0), 0);  // a profiler trace as SIMULATED: its first step
  const double span = std::max({simulated.step_time, drawn.step_time, 1e-12});
  const double scale = kWidth / span;  // pixels per second of one step
  std::string body;
  double y = 30;
  y += draw(body, "simulated", sim, sim.index_of(c.rank).value_or(0), simulated, scale, y);
  y += draw(body, "measured", meas, meas.index_of(c.rank).value_or(0), drawn, scale, y);
  // Time axis in milliseconds, about ten ticks.
  const double ms = span * 1e3;
  const double tick = nice_tick(ms);
  std::string axis;
  for (double t = 0; t <= ms * 1.0001; t += tick) {
    const double x = kLeft + t / ms * kWidth;
    axis += fmt::format(
        R"(<line x1="{0:.1f}" y1="30" x2="{0:.1f}" y2="{1:.1f}" stroke="#ccc" stroke-width="0.5"/><text x="{0:.1f}" y="{2:.1f}" font-size="10" text-anchor="middle">{3:g}</text>)",
        x, y, y + 12, t);
    axis += "\n";
  }
  std::string legend;
  double lx = kLeft;
  for (int k = 0; k < kActivityClasses; ++k) {
    legend +=
        fmt::format(R"(<rect x="{:.0f}" y="{:.1f}" width="10" height="10" fill="{}"/><text x="{:.0f}" y="{:.1f}" font-size="11">{}</text>)",
                    lx, y + 22, kColours[static_cast<std::size_t>(k)], lx + 14, y + 31, to_string(static_cast<ActivityClass>(k)));
    lx += 130;
  }
  const double height = y + 45;
  return fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{:.0f}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="8" y="18" font-size="14">shardsim compare: rank {}, each step from its start (time in ms; step time error {:+.1f} %)</text>
{}{}<text x="{}" y="{:.1f}" font-size="10">ms</text>
{}</svg>
)",
                     kLeft + kWidth + 20, height, c.rank,
                     c.measured.step_time > 0 ? 100 * (c.simulated.step_time - c.measured.step_time) / c.measured.step_time : 0.0, axis,
                     body, kLeft + kWidth + 4, y + 12, legend);
}

}  // namespace shardsim::validate
