#include "sweep/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/xml.hpp"

namespace shardsim::sweep::svg {

std::string escape(std::string_view s) {
  return xml_escape(s);
}

std::vector<double> ticks(double lo, double hi, int count) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, count);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * p;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  }
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return out;
}

std::string ramp(double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
  constexpr std::array<std::array<double, 3>, 3> stops{{{0x66, 0xbd, 0x63}, {0xff, 0xff, 0xbf}, {0xf4, 0x6d, 0x43}}};
  const auto& a = t < 0.5 ? stops[0] : stops[1];
  const auto& b = t < 0.5 ? stops[1] : stops[2];
  const double u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
  auto mix = [&](std::size_t i) { return static_cast<int>(std::lround(a[i] + (b[i] - a[i]) * u)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0), mix(1), mix(2));
}

std::string seconds(double s) {
  return fmt::format("{:#.4g} s", s);
}

std::string gib(double bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  if (bytes < 1024 * kMiB) return fmt::format("{:.1f} MiB", bytes / kMiB);  // tiny test scenarios
  return fmt::format("{:.1f} GiB", bytes / (1024 * kMiB));
}

double text_width(std::string_view text, double font_px) {
  return static_cast<double>(text.size()) * font_px * 0.6;  // average advance of sans-serif glyphs
}

}  // namespace shardsim::sweep::svg
