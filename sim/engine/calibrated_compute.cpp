#include "engine/calibrated_compute.hpp"

namespace shardsim::engine {

CalibratedComputeModel::CalibratedComputeModel(const config::GpuSpec& gpu, bool low_precision, const config::CalibrationConfig& c) {
  const double peak = low_precision ? gpu.peak_bf16.value() : gpu.peak_fp32.value();
  const auto& e = gpu.efficiency;
  gemm_rate_ = c.gemm ? c.gemm->rate : peak * e.matmul;
  gemm_half_flops_ = c.gemm ? c.gemm->half_rate_flops : 0.0;
  attention_forward_rate_ = c.attention_forward_rate.value_or(peak * e.attention_forward);
  attention_backward_rate_ = c.attention_backward_rate.value_or(peak * e.attention_backward);
  memory_bandwidth_ = c.memory_bandwidth.value_or(gpu.hbm_bandwidth.value() * e.memory);
  kernel_launch_ = c.kernel_launch.value_or(gpu.kernel_launch.value());
}

double CalibratedComputeModel::duration(const graph::Op& op) const {
  const graph::Work& w = op.work;
  double t = 0;
  for (const graph::Gemm& g : w.gemms) t += (g.flops() + gemm_half_flops_) / gemm_rate_;
  t += w.attention_flops(false) / attention_forward_rate_;
  t += w.attention_flops(true) / attention_backward_rate_;
  t += w.memory_bytes / memory_bandwidth_;
  t += w.launches * kernel_launch_;
  return t;
}

}  // namespace shardsim::engine
