// Prices compute ops. The default, `roofline`, adds up each kind of work at its achievable rate:
//   t = GEMM FLOPs / (peak x matmul eff) + attention FLOPs / (peak x attention eff, fwd or bwd)
//     + memory-bound bytes / (HBM bandwidth x memory eff) + kernels x launch cost
//     + PCIe bytes / PCIe bandwidth (host copies) + host bytes / CPU memory bandwidth
// Kernels of one op run one after another on the compute stream, so their times add. The
// efficiencies are per GPU type (topology gpu.efficiency), not per scenario.
#pragma once

#include "config/topology.hpp"
#include "graph/op.hpp"

namespace shardsim::engine {

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  // Seconds the op occupies its stream on one GPU. Must not depend on anything but the op.
  [[nodiscard]] virtual double duration(const graph::Op& op) const = 0;
  // Speed of compute-stream work while a collective runs on the same GPU, relative to alone.
  [[nodiscard]] virtual double speed_while_communicating() const = 0;
};

class RooflineModel final : public ComputeModel {
 public:
  // `low_precision`: compute runs in bf16/fp16 (tensor-core peak), else fp32.
  RooflineModel(const config::TopologyConfig& topo, bool low_precision);
  [[nodiscard]] double duration(const graph::Op& op) const override;
  [[nodiscard]] double speed_while_communicating() const override { return 1.0 - gpu_.comm_interference; }

 private:
  config::GpuSpec gpu_;
  config::LinkSpec pcie_;  // host copies (CPU offload)
  config::HostSpec host_;  // CPU work (offloaded optimizer)
  double peak_;
};

}  // namespace shardsim::engine
