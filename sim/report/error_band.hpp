// Honest error bands: how far off shardsim has been on published runs like the one simulated.
// validation/residuals.csv holds the signed error (predicted / measured - 1) of every development
// case `make validate` checks, with the case's regime (GPU generation, float8 recipe class,
// whether its simulated step is compute- or communication-bound, and whether it splits its
// sequences by context parallelism); it is
// compiled in, and the validation CTest fails when it no longer matches today's errors. A
// prediction's 90% range is the prediction interval of one more run's error from the errors of
// the runs in its regime, mean +- t(0.95, n-1) s sqrt(1 + 1/n) (docs/fidelity.md; leave-one-out
// on the published runs it holds 65 of 71):
//
//   const ErrorBand b = error_band(builtin_residuals(), regime_of(scenario, exposed_comm_s, step_s));
//   // measured tokens/s lies in [predicted / (1 + b.error_high), predicted / (1 + b.error_low)]
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/scenario.hpp"

namespace shardsim::report {

struct Regime {
  std::string arch;               // GPU generation: "ampere", "hopper", ...
  std::string float8;             // "none", "tensorwise", "rowwise" (rowwise_with_gw_hp too), "mxfp8"
  std::string bound;              // "compute", or "communication" where the step is kCommunicationBound or more exposed communication
  std::string context = "none";   // "cp" where context parallelism splits the sequences (parallelism.cp > 1)
  std::string pipeline = "none";  // "pp" where pipeline parallelism splits the layers (parallelism.pp > 1)
};

// The share of the step its exposed communication takes from which a run counts as
// communication-bound: a tenth of the step with the GPU idle for collectives.
inline constexpr double kCommunicationBound = 0.10;
[[nodiscard]] std::string bound_of(double exposed_comm_s, double step_s);

struct Residual {
  std::string id;  // published case, "D1", "P2", ...
  // "tokens/s", "TFLOPS" (throughput); "GiB reserved" (peak reserved memory);
  // "GiB allocated", "GiB alloc rank 0" (peak allocated memory)
  std::string metric;
  Regime regime;
  double error = 0;  // predicted / measured - 1
};

struct ErrorBand {
  double error_low = 0;  // the 90% prediction interval of a run's error
  double error_high = 0;
  int runs = 0;       // published runs it rests on (0: none: no band)
  std::string basis;  // "hopper GPUs without float8", "all runs", ...
  // Where the band pools GPU generations and fewer than five of its runs are on the prediction's
  // own (none, for a GPU no published run used): how many are; -1 where that is not so. The basis
  // then says it ("runs without float8, none on blackwell GPUs"): the range is other GPUs'.
  int gpu_runs = -1;
};

[[nodiscard]] Regime regime_of(const config::ScenarioConfig& s, double exposed_comm_s, double step_s);

// A context-parallel run takes the band of the context-parallel runs, whatever their GPU, float8
// class and bound, when there are at least five: long-sequence ring attention is where the model
// is least certain (docs/fidelity.md). Other runs, and context-parallel ones with fewer than five
// of their kind, take the band of the runs in the same GPU generation, float8 class and bound when
// there are at least five, else the same GPU generation and float8 class, else the same float8
// class on any GPU, else all runs; a run without context parallelism leaves the context-parallel
// runs out of each. runs == 0 when there are fewer than two. Only throughput residuals count.
// A band that pools GPU generations says how few of its runs were on the prediction's own (gpu_runs).
[[nodiscard]] ErrorBand error_band(const std::vector<Residual>& residuals, const Regime& r);

// What a residual measures: throughput, or peak reserved or allocated memory.
enum class Measure { throughput, reserved, allocated };
[[nodiscard]] Measure measure_of(std::string_view metric);

// The 90% band of a peak-memory prediction: from the published runs' errors on that measure
// (reserved or allocated), whatever their GPU or recipe, a pipelined run's (`pipelined`) from the
// pipelined runs' when there are at least five, any other's from the runs without a pipeline
// (a pipeline stage's memory is where the model has been least right, docs/fidelity.md); runs ==
// 0 when there are fewer than two.
[[nodiscard]] ErrorBand memory_band(const std::vector<Residual>& residuals, Measure m, bool pipelined = false);

[[nodiscard]] std::vector<Residual> builtin_residuals();  // validation/residuals.csv, as built
[[nodiscard]] std::vector<Residual> parse_residuals(std::string_view csv);
[[nodiscard]] std::string residuals_csv(const std::vector<Residual>& residuals);

}  // namespace shardsim::report
