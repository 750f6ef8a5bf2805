#include "engine/compute_model.hpp"

namespace shardsim::engine {

RooflineModel::RooflineModel(const config::TopologyConfig& topo, bool low_precision)
    : gpu_(topo.gpu),
      pcie_(topo.node.pcie),
      host_(topo.host),
      peak_(low_precision ? topo.gpu.peak_bf16.value() : topo.gpu.peak_fp32.value()) {}

double RooflineModel::duration(const graph::Op& op) const {
  const graph::Work& w = op.work;
  const auto& e = gpu_.efficiency;
  double t = w.gemm_flops() / (peak_ * e.matmul);
  t += w.attention_flops(false) / (peak_ * e.attention_forward);
  t += w.attention_flops(true) / (peak_ * e.attention_backward);
  t += w.memory_bytes / (gpu_.hbm_bandwidth.value() * e.memory);
  t += w.launches * gpu_.kernel_launch.value();
  t += w.pcie_bytes > 0 ? w.pcie_bytes / pcie_.bandwidth.value() + pcie_.latency.value() : 0.0;
  t += w.host_bytes / host_.memory_bandwidth.value();
  return t;
}

}  // namespace shardsim::engine
