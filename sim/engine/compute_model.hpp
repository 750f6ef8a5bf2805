// Prices compute ops. The default, `roofline`, adds up each kind of work at its achievable rate:
//   t = GEMM FLOPs / (peak x matmul eff) + attention FLOPs / (peak x attention eff, fwd or bwd)
//     + memory-bound bytes / (HBM bandwidth x memory eff) + kernels x launch cost
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
};

class RooflineModel final : public ComputeModel {
 public:
  // `low_precision`: compute runs in bf16/fp16 (tensor-core peak), else fp32.
  RooflineModel(const config::GpuSpec& gpu, bool low_precision);
  [[nodiscard]] double duration(const graph::Op& op) const override;

 private:
  config::GpuSpec gpu_;
  double peak_;
};

}  // namespace shardsim::engine
