#include "engine/compute_model.hpp"

namespace shardsim::engine {

RooflineModel::RooflineModel(const config::GpuSpec& gpu, bool low_precision)
    : gpu_(gpu), peak_(low_precision ? gpu.peak_bf16.value() : gpu.peak_fp32.value()) {}

double RooflineModel::duration(const graph::Op& op) const {
  const graph::Work& w = op.work;
  const auto& e = gpu_.efficiency;
  double t = w.gemm_flops() / (peak_ * e.matmul);
  t += w.attention_flops(false) / (peak_ * e.attention_forward);
  t += w.attention_flops(true) / (peak_ * e.attention_backward);
  t += w.memory_bytes / (gpu_.hbm_bandwidth.value() * e.memory);
  t += w.launches * gpu_.kernel_launch.value();
  return t;
}

}  // namespace shardsim::engine
