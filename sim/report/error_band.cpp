#include "report/error_band.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace shardsim::report {

extern const char* const kResidualsCsv;  // residuals_data.cpp, generated from validation/residuals.csv

namespace {

constexpr int kMinRuns = 5;

// Student's t, one-sided 95% (two-sided 90%), by degrees of freedom; past 30 the Cornish-Fisher
// expansion z + (z^3 + z) / (4 df) with z = 1.6449.
double t95(int df) {
  static constexpr std::array<double, 30> kTable{6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
                                                 1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
                                                 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
  if (df >= 1 && df <= 30) return kTable[static_cast<std::size_t>(df - 1)];
  constexpr double z = 1.6449;
  return z + (z * z * z + z) / (4.0 * df);
}

struct Level {
  bool arch, float8, bound;
};

// A 90% prediction interval for one more run's error: mean +- t(0.95, n-1) s sqrt(1 + 1/n).
ErrorBand interval(const std::vector<double>& errors, std::string basis) {
  const double n = static_cast<double>(errors.size());
  double mean = 0;
  for (double e : errors) mean += e / n;
  double var = 0;
  for (double e : errors) var += (e - mean) * (e - mean) / (n - 1);
  const double half = t95(static_cast<int>(errors.size()) - 1) * std::sqrt(var * (1 + 1 / n));
  return {std::max(mean - half, -0.9), mean + half, static_cast<int>(errors.size()), std::move(basis)};
}

// The errors of the residuals `keep` accepts.
template <typename Keep>
std::vector<double> errors_where(const std::vector<Residual>& residuals, Keep keep) {
  std::vector<double> errors;
  for (const auto& x : residuals) {
    if (keep(x)) errors.push_back(x.error);
  }
  return errors;
}

std::string describe(const Regime& r, const Level& l) {
  const std::string f8 = r.float8 == "none" ? "without float8" : fmt::format("with float8 {}", r.float8);
  // communication-bound: exposed communication kCommunicationBound of the step or more (docs/fidelity.md)
  if (l.bound) return fmt::format("{} GPUs {}, {}-bound", r.arch, f8, r.bound);
  if (l.arch && l.float8) return fmt::format("{} GPUs {}", r.arch, f8);
  if (l.float8) return fmt::format("runs {}", f8);
  return "all runs";
}

}  // namespace

std::string bound_of(double exposed_comm_s, double step_s) {
  return step_s > 0 && exposed_comm_s >= kCommunicationBound * step_s ? "communication" : "compute";
}

Regime regime_of(const config::ScenarioConfig& s, double exposed_comm_s, double step_s) {
  Regime r;
  r.bound = bound_of(exposed_comm_s, step_s);
  r.arch = config::kGpuArchNames[static_cast<std::size_t>(s.cluster.topology.gpu.arch)];
  r.context = s.parallelism.cp > 1 ? "cp" : "none";
  r.pipeline = s.parallelism.pp > 1 ? "pp" : "none";
  r.float8 = "none";
  if (s.training.float8.enabled) {
    switch (s.training.float8.recipe.value) {
      case config::Float8RecipeName::tensorwise:
        r.float8 = "tensorwise";
        break;
      case config::Float8RecipeName::rowwise:
      case config::Float8RecipeName::rowwise_with_gw_hp:
        r.float8 = "rowwise";
        break;
      case config::Float8RecipeName::mxfp8:
        r.float8 = "mxfp8";
        break;
      case config::Float8RecipeName::none:
        break;
    }
  }
  return r;
}

Measure measure_of(std::string_view metric) {
  if (metric == "GiB reserved") return Measure::reserved;
  if (metric.starts_with("GiB")) return Measure::allocated;
  return Measure::throughput;
}

ErrorBand memory_band(const std::vector<Residual>& residuals, Measure m, bool pipelined) {
  if (m == Measure::throughput) return {};
  const std::string what = m == Measure::reserved ? "reserved" : "allocated";
  // The runs with a pipeline (true), without (false) or all of them (nullopt).
  const auto of = [&](std::optional<bool> pp) {
    return errors_where(residuals,
                        [&](const Residual& x) { return measure_of(x.metric) == m && (!pp || (x.regime.pipeline == "pp") == *pp); });
  };
  if (pipelined) {
    if (const auto errors = of(true); static_cast<int>(errors.size()) >= kMinRuns)
      return interval(errors, what + " memory of pipelined runs");
    const auto errors = of(std::nullopt);
    return errors.size() < 2 ? ErrorBand{} : interval(errors, what + " memory");
  }
  const auto errors = of(false);
  return errors.size() < 2 ? ErrorBand{} : interval(errors, what + " memory of runs without a pipeline");
}

ErrorBand error_band(const std::vector<Residual>& residuals, const Regime& r) {
  const auto throughput = [](const Residual& x) { return measure_of(x.metric) == Measure::throughput; };
  // A band over every GPU generation says so where fewer than kMinRuns of its runs were on this one.
  const auto pooled = [&](ErrorBand band, auto keep) {
    const int own = static_cast<int>(errors_where(residuals, [&](const Residual& x) { return keep(x) && x.regime.arch == r.arch; }).size());
    if (own < kMinRuns) {
      band.gpu_runs = own;
      band.basis += own == 0 ? fmt::format(", none on {} GPUs", r.arch) : fmt::format(", only {} on {} GPUs", own, r.arch);
    }
    return band;
  };
  const bool cp = r.context == "cp";
  if (cp) {
    const auto keep = [&](const Residual& x) { return throughput(x) && x.regime.context == "cp"; };
    const std::vector<double> errors = errors_where(residuals, keep);
    if (static_cast<int>(errors.size()) >= kMinRuns) return pooled(interval(errors, "runs with context parallelism"), keep);
  }
  for (const Level& l : std::array<Level, 4>{{{true, true, true}, {true, true, false}, {false, true, false}, {false, false, false}}}) {
    const auto keep = [&](const Residual& x) {
      return throughput(x) && !(l.arch && x.regime.arch != r.arch) && !(l.float8 && x.regime.float8 != r.float8) &&
             !(l.bound && x.regime.bound != r.bound) && (cp || x.regime.context != "cp");
    };
    const std::vector<double> errors = errors_where(residuals, keep);
    if (static_cast<int>(errors.size()) < kMinRuns && (l.arch || l.float8)) continue;
    if (errors.size() < 2) return {};
    ErrorBand band = interval(errors, describe(r, l));
    return l.arch ? band : pooled(std::move(band), keep);
  }
  return {};
}

std::vector<Residual> parse_residuals(std::string_view csv) {
  std::vector<Residual> out;
  std::istringstream in{std::string(csv)};
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (header) {
      header = false;
      continue;
    }
    std::array<std::string, 8> f;  // context and pipeline absent from older files: none
    std::istringstream row(line);
    for (auto& field : f) std::getline(row, field, ',');
    out.push_back({f[0], f[1], {f[2], f[3], f[4], f[6].empty() ? "none" : f[6], f[7].empty() ? "none" : f[7]}, std::stod(f[5])});
  }
  return out;
}

std::string residuals_csv(const std::vector<Residual>& residuals) {
  std::string out = "case,metric,arch,float8,bound,error,context,pipeline\n";
  for (const auto& r : residuals)
    out += fmt::format("{},{},{},{},{},{:.4f},{},{}\n", r.id, r.metric, r.regime.arch, r.regime.float8, r.regime.bound, r.error,
                       r.regime.context, r.regime.pipeline);
  return out;
}

std::vector<Residual> builtin_residuals() {
  static const std::vector<Residual> residuals = parse_residuals(kResidualsCsv);
  return residuals;
}

}  // namespace shardsim::report
