#include "engine/compute_model.hpp"

namespace shardsim::engine {

ComputeRates ComputeRates::nominal(const config::TopologyConfig& topo, bool low_precision) {
  const auto& g = topo.gpu;
  const double peak = low_precision ? g.peak_bf16.value() : g.peak_fp32.value();
  ComputeRates r;
  r.gemm = peak * g.efficiency.matmul;
  r.attention_forward = peak * g.efficiency.attention_forward;
  r.attention_backward = peak * g.efficiency.attention_backward;
  r.memory = g.hbm_bandwidth.value() * g.efficiency.memory;
  r.kernel_launch = g.kernel_launch.value();
  r.pcie = topo.node.pcie.bandwidth.value();
  r.pcie_latency = topo.node.pcie.latency.value();
  r.host_memory = topo.host.memory_bandwidth.value();
  r.comm_interference = g.comm_interference;
  return r;
}

graph::ComputeSplit RooflineModel::split(const graph::Op& op) const {
  const graph::Work& w = op.work;
  graph::ComputeSplit s;
  for (const graph::Gemm& gemm : w.gemms) s.gemm += (gemm.flops() + r_.gemm_half_flops) / r_.gemm;
  s.attention = w.attention_flops(false) / r_.attention_forward + w.attention_flops(true) / r_.attention_backward;
  s.memory = w.memory_bytes / r_.memory;
  s.launch = w.launches * r_.kernel_launch;
  s.other = (w.pcie_bytes > 0 ? w.pcie_bytes / r_.pcie + r_.pcie_latency : 0.0) + w.host_bytes / r_.host_memory;
  return s;
}

void register_builtin_compute_models(ComputeModelRegistry& registry) {
  registry.add({"roofline", "each kind of work at its achievable rate: GEMM and attention FLOPs, memory-bound bytes, launches",
                [](const ComputeRates& rates) { return std::make_unique<RooflineModel>(rates); }});
}

}  // namespace shardsim::engine
