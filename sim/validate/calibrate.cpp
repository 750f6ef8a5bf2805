#include "validate/calibrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "core/units.hpp"
#include "validate/collective_fit.hpp"
#include "validate/least_squares.hpp"

namespace shardsim::validate {
namespace {

struct Problem {
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
};

std::vector<double> solve(const Problem& p, const std::string& what, std::size_t min_samples) {
  if (p.y.size() < min_samples) {
    throw RuntimeError(fmt::format("calibrate: {}: {} samples; need at least {}", what, p.y.size(), min_samples));
  }
  const auto w = relative_weights(p.y);
  try {
    return nonnegative_least_squares(p.rows, p.y, w);
  } catch (const RuntimeError& e) {
    throw RuntimeError(fmt::format("calibrate: {}: {}", what, e.what()));
  }
}

Residuals residuals(std::string what, std::span<const double> predicted, std::span<const double> measured) {
  Residuals r{std::move(what), static_cast<int>(measured.size()), 0, 0};
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const double e = std::fabs(predicted[i] - measured[i]) / measured[i];
    r.mean += e;
    r.worst = std::max(r.worst, e);
  }
  if (!measured.empty()) r.mean /= static_cast<double>(measured.size());
  return r;
}

double positive_rate(double inverse, const std::string& what, const char* growing) {
  if (!(inverse > 0)) throw RuntimeError(fmt::format("calibrate: {}: the times do not grow with {}; measure larger sizes", what, growing));
  return 1.0 / inverse;
}

// t = launch + x . c over samples: returns c, and the residuals of the full model.
template <class Sample>
std::vector<double> fit_kernel(const std::vector<Sample>& samples, const std::string& what, double launch,
                               const std::function<std::vector<double>(const Sample&)>& features, CalibrationFit& fit) {
  // A launch cost fitted on copies can exceed the fastest kernel of another sweep (different
  // kernels, a noisy intercept); then charge that sweep at most 90% of its fastest sample.
  for (const auto& s : samples) launch = std::min(launch, 0.9 * s.seconds);
  Problem p;
  for (const auto& s : samples) {
    p.rows.push_back(features(s));
    p.y.push_back(s.seconds - launch);
  }
  // A fixed cost beside a rate (features {1, size}) needs two sizes at least: kernels of one size
  // (a small model's one classifier GEMM) give no fixed cost beyond the launch, only the rate.
  const bool one_size =
      p.rows.front().size() == 2 && std::ranges::all_of(p.rows, [&](const std::vector<double>& x) { return x[1] == p.rows.front()[1]; });
  if (one_size) {
    for (auto& x : p.rows) x.erase(x.begin());
    fit.notes.push_back(fmt::format("{}: every sample has one size: fitted as the launch cost plus one rate, no fixed cost", what));
  }
  const auto solved = solve(p, what, p.rows.front().size() + 1);
  std::vector<double> c(solved.size() + (one_size ? 1 : 0), 0.0);  // no fixed cost where one_size
  std::ranges::copy(solved, c.end() - static_cast<std::ptrdiff_t>(solved.size()));
  std::vector<double> predicted;
  std::vector<double> measured;
  for (const auto& s : samples) {
    const auto x = features(s);
    double t = launch;
    for (std::size_t j = 0; j < x.size(); ++j) t += x[j] * c[j];
    predicted.push_back(t);
    measured.push_back(s.seconds);
  }
  fit.residuals.push_back(residuals(what, predicted, measured));
  return c;
}

// The sizes a compute fit saw: a curve fitted to small kernels (a trace of a small model) prices
// a large training run's kernels by extrapolation, which the user must know.
template <class Sample, class Flops>
void note_range(CalibrationFit& fit, const std::string& what, const std::vector<Sample>& samples, Flops flops) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = 0;
  for (const auto& s : samples) {
    lo = std::min(lo, flops(s));
    hi = std::max(hi, flops(s));
  }
  fit.notes.push_back(
      fmt::format("{}: fitted on kernels of {:.3g} to {:.3g} GFLOP; larger and smaller ones are priced by extrapolating the fit", what,
                  lo / 1e9, hi / 1e9));
}

}  // namespace

CalibrationFit fit_calibration(const BenchResults& b, const FitOptions& options) {
  CalibrationFit fit;
  auto& cal = fit.calibration;
  double launch = 0;
  if (!b.memory.empty()) {
    const auto c = fit_kernel<MemorySample>(
        b.memory, "memory", 0.0,
        [](const MemorySample& s) {
          return std::vector<double>{1.0, s.bytes};
        },
        fit);
    launch = c[0];
    cal.kernel_launch = launch;
    cal.memory_bandwidth = positive_rate(c[1], "memory", "bytes");
  }
  // bf16 GEMMs, float8 with fast and with precise accumulation: a curve each, from their own samples.
  const std::array<std::tuple<const char*, GemmPrecision, std::optional<config::GemmCalibration>*>, 3> curves{
      {{"gemm", GemmPrecision::bf16, &cal.gemm},
       {"gemm_fp8", GemmPrecision::fp8, &cal.gemm_fp8},
       {"gemm_fp8_precise", GemmPrecision::fp8_precise, &cal.gemm_fp8_precise}}};
  for (const auto& [what, precision, target] : curves) {
    std::vector<GemmSample> samples;
    for (const auto& s : b.gemms) {
      if (s.precision == precision) samples.push_back(s);
    }
    if (samples.empty()) continue;
    const auto c = fit_kernel<GemmSample>(
        samples, what, launch,
        [](const GemmSample& s) {
          return std::vector<double>{1.0, s.flops()};
        },
        fit);
    const double rate = positive_rate(c[1], what, "FLOPs");
    *target = config::GemmCalibration{rate, c[0] * rate};
    note_range(fit, what, samples, [](const GemmSample& s) { return s.flops(); });
  }
  for (const bool backward : {false, true}) {
    std::vector<AttentionSample> samples;
    for (const auto& s : b.attention) {
      if (s.call.backward == backward) samples.push_back(s);
    }
    if (samples.empty()) continue;
    const std::string what = backward ? "attention backward" : "attention forward";
    const auto c = fit_kernel<AttentionSample>(
        samples, what, launch, [](const AttentionSample& s) { return std::vector<double>{s.call.flops()}; }, fit);
    (backward ? cal.attention_backward_rate : cal.attention_forward_rate) = positive_rate(c[0], what, "FLOPs");
    note_range(fit, what, samples, [](const AttentionSample& s) { return s.call.flops(); });
  }
  fit_collectives(b, options, fit);
  return fit;
}

std::string calibration_yaml(const CalibrationFit& fit, const std::string& name, std::span<const std::string> sources) {
  const auto& c = fit.calibration;
  std::string out = "# A shardsim calibration, written by `shardsim calibrate` from:\n";
  for (const auto& s : sources) out += fmt::format("#   {}\n", s);
  out += "# Fits: weighted linear least squares, weights 1/t^2 (relative error), coefficients >= 0.\n";
  out += "# Residuals (|predicted - measured| / measured):\n";
  for (const auto& r : fit.residuals)
    out += fmt::format("#   {:<28} {:>4} samples  mean {:6.2f} %  worst {:6.2f} %\n", r.what, r.samples, 100 * r.mean, 100 * r.worst);
  for (const auto& n : fit.notes) out += fmt::format("# Note: {}\n", n);
  std::string quoted;
  for (char ch : name) quoted += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
  out += fmt::format("name: \"{}\"\n", quoted);
  if (c.gemm || c.gemm_fp8 || c.gemm_fp8_precise || c.attention_forward_rate || c.attention_backward_rate || c.memory_bandwidth ||
      c.kernel_launch) {
    out += "compute:\n";
    if (c.gemm)
      out +=
          fmt::format("  gemm: {{rate: {:.6g}TFLOPS, half_rate_flops: {:.6g}GFLOP}}\n", c.gemm->rate / 1e12, c.gemm->half_rate_flops / 1e9);
    if (c.gemm_fp8)
      out += fmt::format("  gemm_fp8: {{rate: {:.6g}TFLOPS, half_rate_flops: {:.6g}GFLOP}}\n", c.gemm_fp8->rate / 1e12,
                         c.gemm_fp8->half_rate_flops / 1e9);
    if (c.gemm_fp8_precise)
      out += fmt::format("  gemm_fp8_precise: {{rate: {:.6g}TFLOPS, half_rate_flops: {:.6g}GFLOP}}\n", c.gemm_fp8_precise->rate / 1e12,
                         c.gemm_fp8_precise->half_rate_flops / 1e9);
    if (c.attention_forward_rate) out += fmt::format("  attention_forward: {{rate: {:.6g}TFLOPS}}\n", *c.attention_forward_rate / 1e12);
    if (c.attention_backward_rate) out += fmt::format("  attention_backward: {{rate: {:.6g}TFLOPS}}\n", *c.attention_backward_rate / 1e12);
    if (c.memory_bandwidth) out += fmt::format("  memory_bandwidth: {:.6g}GB/s\n", *c.memory_bandwidth / 1e9);
    if (c.kernel_launch) out += fmt::format("  kernel_launch: {:.6g}us\n", *c.kernel_launch * 1e6);
  }
  if (c.has_collectives()) {
    out += "collectives:\n";
    for (int l = 0; l < config::kLinkClasses; ++l) {
      const auto& link = c.collectives[static_cast<std::size_t>(l)];
      if (std::none_of(link.begin(), link.end(), [](const auto& e) { return e.has_value(); })) continue;
      out += fmt::format("  {}:\n", config::to_string(static_cast<config::LinkClass>(l)));
      for (int k = 0; k < config::kCollectiveKinds; ++k) {
        const auto& e = link[static_cast<std::size_t>(k)];
        if (!e) continue;
        const auto kind = config::kCollectiveKindNames[static_cast<std::size_t>(k)];
        if (e->sizes.empty()) {
          out += fmt::format("    {}: {{base_latency: {:.6g}us, hop_latency: {:.6g}us, bus_bandwidth: {:.6g}GB/s}}\n", kind,
                             e->base_latency * 1e6, e->hop_latency * 1e6, e->bus_bandwidth / 1e9);
          continue;
        }
        out += fmt::format(
            "    {}:\n      sizes:  # t = base + steps x hop + S f(n) / busbw from each size on; below the first: the topology's model\n",
            kind);
        for (const auto& p : e->sizes) {
          out += fmt::format("        - {{from: {:.0f}B, base_latency: {:.6g}us, hop_latency: {:.6g}us, bus_bandwidth: {:.6g}GB/s}}\n",
                             p.from_bytes, p.base_latency * 1e6, p.hop_latency * 1e6, p.bus_bandwidth / 1e9);
        }
      }
    }
  }
  return out;
}

std::string residuals_text(const CalibrationFit& fit) {
  const auto& c = fit.calibration;
  std::string out;
  if (c.memory_bandwidth)
    out += fmt::format("  memory        {:.4g} GB/s, kernel launch {:.3g} us\n", *c.memory_bandwidth / 1e9, *c.kernel_launch * 1e6);
  if (c.gemm)
    out += fmt::format("  gemm          {:.4g} TFLOPS, half rate at {:.3g} GFLOP\n", c.gemm->rate / 1e12, c.gemm->half_rate_flops / 1e9);
  if (c.gemm_fp8)
    out += fmt::format("  gemm fp8      {:.4g} TFLOPS, half rate at {:.3g} GFLOP\n", c.gemm_fp8->rate / 1e12,
                       c.gemm_fp8->half_rate_flops / 1e9);
  if (c.gemm_fp8_precise)
    out += fmt::format("  gemm fp8 prec {:.4g} TFLOPS, half rate at {:.3g} GFLOP (precise accumulation)\n", c.gemm_fp8_precise->rate / 1e12,
                       c.gemm_fp8_precise->half_rate_flops / 1e9);
  if (c.attention_forward_rate) out += fmt::format("  attention fwd {:.4g} TFLOPS\n", *c.attention_forward_rate / 1e12);
  if (c.attention_backward_rate) out += fmt::format("  attention bwd {:.4g} TFLOPS\n", *c.attention_backward_rate / 1e12);
  for (int l = 0; l < config::kLinkClasses; ++l) {
    for (int k = 0; k < config::kCollectiveKinds; ++k) {
      const auto& e = c.collectives[static_cast<std::size_t>(l)][static_cast<std::size_t>(k)];
      if (!e) continue;
      const auto name = config::kCollectiveKindNames[static_cast<std::size_t>(k)];
      const auto link = config::to_string(static_cast<config::LinkClass>(l));
      if (e->sizes.empty()) {
        out += fmt::format("  {:<14} over {:<6} base {:.3g} us + {:.3g} us/step, bus bandwidth {:.4g} GB/s\n", name, link,
                           e->base_latency * 1e6, e->hop_latency * 1e6, e->bus_bandwidth / 1e9);
        continue;
      }
      for (const auto& p : e->sizes) {
        out += fmt::format("  {:<14} over {:<6} from {:>10}: base {:.3g} us + {:.3g} us/step, bus bandwidth {:.4g} GB/s\n", name, link,
                           format_bytes(Bytes(p.from_bytes)), p.base_latency * 1e6, p.hop_latency * 1e6, p.bus_bandwidth / 1e9);
      }
    }
  }
  if (!fit.sizes.empty()) {
    out += "  collective sizes (measured times; predicted by the piece for that size):\n";
    for (const auto& r : fit.sizes) {
      std::string measured;
      for (double t : r.measured) measured += fmt::format("{}{:.1f}", measured.empty() ? "" : " / ", t * 1e6);
      out += fmt::format("    {:<34} {:>10}  measured {:>20} us  predicted {:>10.1f} us  worst {:+6.1f} %\n", r.what,
                         format_bytes(Bytes(r.bytes)), measured, r.predicted * 1e6, 100 * r.worst);
    }
  }
  out += "  residuals (|predicted - measured| / measured):\n";
  for (const auto& r : fit.residuals) {
    out += fmt::format("    {:<28} {:>4} samples  mean {:6.2f} %  worst {:6.2f} %\n", r.what, r.samples, 100 * r.mean, 100 * r.worst);
  }
  for (const auto& n : fit.notes) out += fmt::format("  note: {}\n", n);
  return out;
}

}  // namespace shardsim::validate
