// `shardsim calibrate`: fits the calibration's cost models (config/calibration.hpp) to
// microbenchmark samples (bench_data.hpp), by weighted linear least squares with weights 1/t^2
// (relative error) and coefficients held >= 0 (least_squares.hpp):
//   memory:     t = launch + B / bandwidth                        -> kernel_launch, memory_bandwidth
//   GEMM:       t = launch + (F + F_half) / rate                  -> gemm rate and half_rate_flops
//   attention:  t = launch + F / rate  (forward, backward)        -> attention rates
//   collective: t = base + steps x hop + S f(n) / busbw, piecewise by size (collective_fit.cpp)
//                                                                  -> per kind and link class
// `launch` is the memory fit's intercept (0 without memory samples). A collective fit separates
// base and per-step latency only when samples span several ring lengths; with one, the latency is
// all base. A NIC fit subtracts the intra-node steps at the NVLink fit's per-step latency when
// there is one. Each fit reports its residuals: mean and worst |predicted - measured| / measured.
#pragma once

#include <limits>
#include <span>
#include <string>
#include <vector>

#include "config/calibration.hpp"
#include "validate/bench_data.hpp"

namespace shardsim::validate {

struct Residuals {
  std::string what;  // "gemm", "all_gather over nvlink", ...
  int samples = 0;
  double mean = 0;   // mean |relative error|
  double worst = 0;  // largest |relative error|
};

// One measured size of a collective curve against the fitted piece that prices it.
struct SizeResidual {
  std::string what;  // "all_reduce over nic, 16 ranks"
  double bytes = 0;
  std::vector<double> measured;  // seconds (nccl-tests: out of place, in place)
  double predicted = 0;          // seconds
  double worst = 0;              // (predicted - measured) / measured of the sample it misses most
};

struct CalibrationFit {
  config::CalibrationConfig calibration;
  std::vector<Residuals> residuals;
  std::vector<SizeResidual> sizes;  // every collective size fitted
  std::vector<std::string> notes;   // what the fits leave to the topology, sizes left out
};

struct FitOptions {
  double min_bytes = 0;  // collective samples outside [min_bytes, max_bytes] are left out
  double max_bytes = std::numeric_limits<double>::infinity();
  double tolerance = 0.05;  // the fewest pieces whose worst residual is within this
  int max_pieces = 4;
};

// Throws RuntimeError when samples cannot determine a fit (too few sizes, or times that do not
// grow with size), naming the fit.
[[nodiscard]] CalibrationFit fit_calibration(const BenchResults& bench, const FitOptions& options = {});

// The YAML that config::load_calibration reads back, with the residuals and sources as comments.
[[nodiscard]] std::string calibration_yaml(const CalibrationFit& fit, const std::string& name, std::span<const std::string> sources);

// A table of the fits and residuals for the terminal.
[[nodiscard]] std::string residuals_text(const CalibrationFit& fit);

}  // namespace shardsim::validate
