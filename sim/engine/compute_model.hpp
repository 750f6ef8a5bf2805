// Prices compute ops. The default, `roofline`, adds up each kind of work at its achievable rate:
//   t = sum over GEMMs max((F + F_half) / R_flops(type) + a C / B_memory, bytes / B_memory)
//     + sum over attention calls F / R_attention (fwd, bwd) x (1 + L_half / L), L the keys a query
//       visits (the sequence, half of it causal, per ring step)
//     + memory-bound bytes / B_memory + kernels x launch cost
//     + PCIe bytes / PCIe bandwidth (host copies) + host bytes / CPU memory bandwidth
// Kernels of one op run one after another on the compute stream, so their times add. The rates
// come from the topology (peak x gpu.efficiency, per GPU type, not per scenario), or from a
// calibration file fitted to measurements (calibrated_compute.hpp), which can also give GEMMs a
// size curve: a GEMM of F_half FLOPs runs at half the rate of a large one (F_half = 0: none).
// A GEMM's bytes are its operands read once and its output written once (m k + k n elements in,
// m n out; float8 operands 1 byte, high-precision operands and every output the compute dtype's
// size): a skinny GEMM (one side of a few hundred, as GQA's wk / wv become under TP) moves more
// bytes per FLOP than the GPU's ridge point and runs at HBM speed, not at the GEMM rate.
// A GEMM also writes its output tile by tile, and the main loop hides only part of that write: a
// = gpu.gemm_output_exposed of the C output bytes at B_memory is added, which costs a GEMM of
// reduction length K the fraction k0 / K more, k0 = a R e / (2 B_memory) with e the output
// element's bytes (106 for bf16 on an H100 at its topology's rates). So that the topology's
// R_gemm keeps its meaning, the rate of GEMMs of LLM shapes (topology files quote it so), it is
// what a Llama 3 8B block's GEMMs (forward, grad_input, grad_weight at 16,384 tokens) average:
// the FLOPs proper run at R_flops = R_gemm / (1 - k0 / K_ref), K_ref their FLOP-weighted
// harmonic mean K. A GEMM with a shorter K than that (row-parallel linears under TP) costs more
// than before the term, a longer one (70B's) less.
// With the GPU's SM count known (gpu.sms), a GEMM's FLOPs also take 1 / fill of the time,
// relative to the same block's: R_flops x fill / fill_ref, fill the share of the SMs its output
// tiles keep busy (engine/gemm_tiles.hpp: tile and wave quantization). A measured curve (a
// calibration's) prices the GEMMs it timed as they ran, and is left as it is.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "config/topology.hpp"
#include "core/registry.hpp"
#include "graph/op.hpp"

namespace shardsim::engine {

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  // Seconds the op occupies its stream on one GPU. Must not depend on anything but the op.
  [[nodiscard]] virtual double duration(const graph::Op& op) const = 0;
  // The same seconds by kind of work, for reports; a model that cannot tell puts all in `other`.
  [[nodiscard]] virtual graph::ComputeSplit split(const graph::Op& op) const {
    graph::ComputeSplit s;
    s.other = duration(op);
    return s;
  }
  // Speed of compute-stream work while a collective runs on the same GPU, relative to alone.
  [[nodiscard]] virtual double speed_while_communicating() const = 0;
};

// A GEMM rate, the size (FLOPs) at which a GEMM runs at half of it, and whether the two were
// measured (a calibration's curve, the output write included) rather than nominal.
struct GemmCurve {
  double rate = 0;
  double half_flops = 0;
  bool measured = false;
};

struct ComputeRates {
  double gemm = 1;                 // FLOP/s of large GEMMs
  double gemm_half_flops = 0;      // the GEMM size that runs at half that rate (0: no size effect)
  double gemm_element_bytes = 2;   // bytes of a high-precision GEMM operand or output element
  double gemm_output_exposed = 0;  // share of a GEMM's output write at `memory` its main loop does not hide
  bool gemm_measured = false;      // `gemm` and its size curve fitted to measured GEMMs (a calibration)
  int sms = 0;                     // SMs a GEMM's tiles run on (0: no tile and wave quantization)
  // Float8 GEMMs (training.float8); rates 0 where the GPU has none. Tensorwise with fast
  // accumulation, and tensorwise or rowwise with precise accumulation (torchao's gradient GEMMs,
  // graph::Gemm::precise_accum): nominal, or a calibration's measured curves (compute.gemm_fp8 /
  // gemm_fp8_precise). Rowwise forward and MXFP8 GEMMs keep the topology's rates, without a size
  // term.
  GemmCurve gemm_fp8;
  GemmCurve gemm_fp8_precise;
  double gemm_fp8_rowwise = 0;
  double gemm_mxfp8 = 0;
  double attention_forward = 1;  // FLOP/s of long-sequence attention
  double attention_backward = 1;
  double attention_half_keys = 0;  // keys per query at which attention runs at half that rate (0: none)
  double memory = 1;               // bytes/s of bandwidth-bound kernels
  double memory_column_cast = 1;   // bytes/s of casts along a tensor's columns (graph::Work::column_cast_bytes)
  double kernel_launch = 0;        // seconds per kernel
  double pcie = 1;                 // bytes/s host <-> device
  double pcie_latency = 0;
  double host_memory = 1;  // bytes/s of CPU work
  double nvme_read = 0;    // bytes/s of NVMe one GPU's process gets: the node's drives / its GPUs (0: none)
  double nvme_write = 0;
  double comm_interference = 0;

  // The topology's figures: peak (bf16 or fp32) x gpu.efficiency, attention at the rates of the
  // kernel training.attention names.
  [[nodiscard]] static ComputeRates nominal(const config::TopologyConfig& topo, bool low_precision,
                                            config::AttentionKernel attention = config::AttentionKernel::flash);
};

class RooflineModel final : public ComputeModel {
 public:
  explicit RooflineModel(const ComputeRates& rates);
  // `low_precision`: compute runs in bf16/fp16 (tensor-core peak), else fp32.
  RooflineModel(const config::TopologyConfig& topo, bool low_precision, config::AttentionKernel attention = config::AttentionKernel::flash)
      : RooflineModel(ComputeRates::nominal(topo, low_precision, attention)) {}
  [[nodiscard]] double duration(const graph::Op& op) const override { return split(op).total(); }
  [[nodiscard]] double attention_seconds(const graph::AttentionCall& call) const;
  [[nodiscard]] graph::ComputeSplit split(const graph::Op& op) const override;
  [[nodiscard]] double speed_while_communicating() const override { return 1.0 - r_.comm_interference; }
  [[nodiscard]] const ComputeRates& rates() const { return r_; }
  // The curve a GEMM runs on: its type's, or precise float8's.
  [[nodiscard]] GemmCurve gemm_curve(const graph::Gemm& gemm) const;
  // One GEMM's seconds: its FLOPs at the type's rate, over its tiles' fill relative to the
  // reference block's, with the exposed part of its output write, or its bytes at HBM speed if
  // slower.
  [[nodiscard]] double gemm_seconds(const graph::Gemm& gemm) const;
  // The reduction length at which a GEMM runs at exactly the type's rate (K_ref above).
  [[nodiscard]] static double reference_k();

 private:
  ComputeRates r_;
  double reference_fill_ = 1;  // the reference block's tile fill on r_.sms SMs (1 without)
};

// The compute models a topology can name (gpu.compute_model), each built from the rates of the
// topology or of a calibration.
struct ComputeModelInfo {
  std::string_view name;
  std::string_view description;
  std::function<std::unique_ptr<ComputeModel>(const ComputeRates& rates)> create;
};

class ComputeModelRegistry : public Registry<ComputeModelInfo> {
 public:
  ComputeModelRegistry() : Registry("compute model") {}
  // Throws ConfigError at the topology's gpu.compute_model with the valid names if unknown.
  [[nodiscard]] const ComputeModelInfo& get(const config::Choice& name) const { return Registry::get(name.name, name.where, name.path); }
};

// roofline.
void register_builtin_compute_models(ComputeModelRegistry& registry);

}  // namespace shardsim::engine
