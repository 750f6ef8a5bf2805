// The roofline compute model (compute_model.hpp) with measured rates from a calibration file in
// place of peak x efficiency, and a GEMM efficiency curve instead of one GEMM efficiency:
//   t = sum over GEMMs (F_i + F_half) / R_gemm + attention FLOPs / R_attention (fwd, bwd)
//     + memory-bound bytes / B_memory + kernels x launch cost
// Anything the calibration leaves out is priced as RooflineModel prices it, from the topology.
#pragma once

#include "config/calibration.hpp"
#include "config/topology.hpp"
#include "engine/compute_model.hpp"

namespace shardsim::engine {

class CalibratedComputeModel final : public ComputeModel {
 public:
  CalibratedComputeModel(const config::GpuSpec& gpu, bool low_precision, const config::CalibrationConfig& calibration);
  [[nodiscard]] double duration(const graph::Op& op) const override;

 private:
  double gemm_rate_;
  double gemm_half_flops_;
  double attention_forward_rate_;
  double attention_backward_rate_;
  double memory_bandwidth_;
  double kernel_launch_;
};

}  // namespace shardsim::engine
