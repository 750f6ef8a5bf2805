// `shardsim calibrate`: fits the calibration's cost models (config/calibration.hpp) to
// microbenchmark samples (bench_data.hpp), by weighted linear least squares with weights 1/t^2
// (relative error) and coefficients held >= 0 (least_squares.hpp):
//   memory:     t = launch + B / bandwidth                        -> kernel_launch, memory_bandwidth
//   GEMM:       t = launch + (F + F_half) / rate                  -> gemm rate and half_rate_flops
//   attention:  t = launch + F / rate  (forward, backward)        -> attention rates
//   collective: t = base + steps x hop + S f(n) / busbw           -> per kind and link class
// `launch` is the memory fit's intercept (0 without memory samples). A collective fit separates
// base and per-step latency only when samples span several ring lengths; with one, the latency is
// all base. A NIC fit subtracts the intra-node steps at the NVLink fit's per-step latency when
// there is one. Each fit reports its residuals: mean and worst |predicted - measured| / measured.
#pragma once

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

struct CalibrationFit {
  config::CalibrationConfig calibration;
  std::vector<Residuals> residuals;
};

// Throws RuntimeError when samples cannot determine a fit (too few, or times that do not grow
// with size), naming the fit.
[[nodiscard]] CalibrationFit fit_calibration(const BenchResults& bench);

// The YAML that config::load_calibration reads back, with the residuals and sources as comments.
[[nodiscard]] std::string calibration_yaml(const CalibrationFit& fit, const std::string& name, std::span<const std::string> sources);

// A table of the fits and residuals for the terminal.
[[nodiscard]] std::string residuals_text(const CalibrationFit& fit);

}  // namespace shardsim::validate
