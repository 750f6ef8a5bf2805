#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/xml.hpp"
#include "report/outputs.hpp"

namespace shardsim::report {
namespace {

constexpr std::array<const char*, graph::kMemCategories> kColors{"#4e79a7", "#f28e2b", "#e15759", "#ff9da7", "#76b7b2",
                                                                 "#59a14f", "#edc948", "#b07aa1", "#9c755f", "#bab0ac"};

}  // namespace

std::string memory_csv(const MemoryTimeline& m) {
  std::string out = "time_s";
  for (int c = 0; c < graph::kMemCategories; ++c) out += fmt::format(",{}_bytes", graph::to_string(static_cast<graph::MemCategory>(c)));
  out += ",total_bytes,reserved_bytes\n";
  for (const auto& p : m.points) {
    out += fmt::format("{:.9f}", p.time);
    for (double b : p.bytes) out += fmt::format(",{:.0f}", b);
    out += fmt::format(",{:.0f},{:.0f}\n", p.total(), p.reserved);
  }
  return out;
}

// Memory over time, stacked by category (a step chart), with the GPU's capacity as a line.
std::string memory_svg(const MemoryTimeline& m, double capacity, const std::string& title) {
  constexpr double W = 900, H = 420, left = 70, right = 200, top = 40, bottom = 50;
  const double pw = W - left - right;
  const double ph = H - top - bottom;
  const double t_end = m.points.empty() ? 1.0 : std::max(m.points.back().time, 1e-9);
  const double y_max = std::max({capacity, m.peak, m.peak_reserved}) * 1.08;
  auto x = [&](double t) { return left + pw * t / t_end; };
  auto y = [&](double b) { return top + ph * (1.0 - b / y_max); };

  std::string svg =
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)", W, H);
  svg += fmt::format(R"(<text x="{}" y="22" font-size="15">{}</text>)", left, xml_escape(title));
  // Stacked areas, bottom category first; each polygon goes along its top edge and back along
  // the edge below it.
  for (int c = graph::kMemCategories - 1; c >= 0; --c) {
    std::string pts;
    auto level = [&](const MemoryPoint& p, int upto) {
      double s = 0;
      for (int k = 0; k <= upto; ++k) s += p.bytes[static_cast<std::size_t>(k)];
      return s;
    };
    double prev_y = 0;
    for (std::size_t i = 0; i < m.points.size(); ++i) {
      const double yy = level(m.points[i], c);
      if (i > 0) pts += fmt::format("{:.1f},{:.1f} ", x(m.points[i].time), y(prev_y));
      pts += fmt::format("{:.1f},{:.1f} ", x(m.points[i].time), y(yy));
      prev_y = yy;
    }
    pts += fmt::format("{:.1f},{:.1f} {:.1f},{:.1f}", x(t_end), y(prev_y), x(t_end), y(0));
    pts += fmt::format(" {:.1f},{:.1f}", x(0), y(0));
    svg += fmt::format(R"(<polygon points="{}" fill="{}" stroke="none"/>)", pts, kColors[static_cast<std::size_t>(c)]);
  }
  // Axes, ticks and the capacity line.
  svg += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="black"/>)", left, top, top + ph);
  svg += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="black"/>)", left, top + ph, left + pw);
  // Round tick steps (1, 2 or 5 x a power of ten) of about a fifth of the range.
  auto nice_step = [](double range) {
    const double raw = range / 5;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double mult : {1.0, 2.0, 5.0}) {
      if (mult * p >= raw) return mult * p;
    }
    return 10 * p;
  };
  const double gib_step = nice_step(y_max / kGiB);
  for (double g = 0; g * kGiB <= y_max; g += gib_step) {
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{:g} GiB</text>)", left - 6, y(g * kGiB) + 4, g);
    svg += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/>)", left, y(g * kGiB), left + pw, y(g * kGiB));
  }
  const double t_step = nice_step(t_end);
  for (double tt = 0; tt <= t_end * 1.0001; tt += t_step) {
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{:g} s</text>)", x(tt), top + ph + 18, tt);
  }
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">time</text>)", left + pw / 2, H - 8);
  svg += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#c00" stroke-dasharray="6,4" stroke-width="2"/>)", left,
                     y(capacity), left + pw, y(capacity));
  svg += fmt::format(R"(<text x="{}" y="{:.1f}" fill="#c00">GPU memory left to PyTorch {:.1f} GiB</text>)", left + 4, y(capacity) - 5,
                     capacity / kGiB);
  // Reserved memory (the caching allocator's pools) as a step line above the allocated areas.
  std::string reserved_pts;
  for (std::size_t i = 0; i < m.points.size(); ++i) {
    if (i > 0) reserved_pts += fmt::format("{:.1f},{:.1f} ", x(m.points[i].time), y(m.points[i - 1].reserved));
    reserved_pts += fmt::format("{:.1f},{:.1f} ", x(m.points[i].time), y(m.points[i].reserved));
  }
  reserved_pts += fmt::format("{:.1f},{:.1f}", x(t_end), y(m.peak_reserved));
  svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="black" stroke-width="1.5"/>)", reserved_pts);
  svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">reserved {:.1f} GiB</text>)", x(t_end) - 110, y(m.peak_reserved) - 6,
                     m.peak_reserved / kGiB);
  svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="black"/><text x="{:.1f}" y="{:.1f}">allocated peak {:.1f} GiB</text>)",
                     x(m.peak_time), y(m.peak), x(m.peak_time) + 6, y(m.peak) - 6, m.peak / kGiB);
  for (int c = 0; c < graph::kMemCategories; ++c) {
    const double ly = top + 10 + 22 * (graph::kMemCategories - 1 - c);
    svg +=
        fmt::format(R"(<rect x="{}" y="{}" width="14" height="14" fill="{}"/>)", W - right + 15, ly, kColors[static_cast<std::size_t>(c)]);
    svg += fmt::format(R"(<text x="{}" y="{}">{}</text>)", W - right + 35, ly + 12, graph::to_string(static_cast<graph::MemCategory>(c)));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace shardsim::report
