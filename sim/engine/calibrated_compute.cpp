#include "engine/calibrated_compute.hpp"

namespace shardsim::engine {

ComputeRates calibrated_rates(ComputeRates r, const config::CalibrationConfig& c) {
  if (c.gemm) {
    r.gemm = c.gemm->rate;
    r.gemm_half_flops = c.gemm->half_rate_flops;
    r.gemm_output_exposed = 0;  // the fit prices measured GEMMs by their FLOPs alone: as measured
    r.gemm_measured = true;     // nor by their tiles' fill
  }
  r.attention_forward = c.attention_forward_rate.value_or(r.attention_forward);
  r.attention_backward = c.attention_backward_rate.value_or(r.attention_backward);
  // A fitted attention rate is the rate measured at the traced lengths, flat: no length curve on top.
  if (c.attention_forward_rate || c.attention_backward_rate) r.attention_half_keys = 0;
  r.memory = c.memory_bandwidth.value_or(r.memory);
  // Column-wise casts stay nominal: the harness times coalesced copies only.
  r.kernel_launch = c.kernel_launch.value_or(r.kernel_launch);
  const auto measured = [](const config::GemmCalibration& g) { return GemmCurve{g.rate, g.half_rate_flops, true}; };
  if (c.gemm_fp8) {
    // Tensorwise float8 as measured; rowwise (CUTLASS) and MXFP8 GEMMs keep the topology's rates.
    // A calibration that timed fast accumulation only prices precise GEMMs by that curve at the
    // topology's precise / fast ratio.
    const double precise_share = r.gemm_fp8.rate > 0 ? r.gemm_fp8_precise.rate / r.gemm_fp8.rate : 1.0;
    r.gemm_fp8 = measured(*c.gemm_fp8);
    r.gemm_fp8_precise = {r.gemm_fp8.rate * precise_share, r.gemm_fp8.half_flops, true};
  }
  if (c.gemm_fp8_precise) r.gemm_fp8_precise = measured(*c.gemm_fp8_precise);
  return r;
}

}  // namespace shardsim::engine
