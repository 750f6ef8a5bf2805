// A calibration file: rates and latencies measured on real hardware (validation/, `shardsim
// calibrate`) that replace the topology's nominal figures in the compute model and in the
// collective cost model. A scenario names one with a top-level `calibration: FILE` key.
//
//   compute:
//     gemm: {rate: 760TFLOPS, half_rate_flops: 4GFLOP}   # t = (F + F_half) / rate per GEMM
//     gemm_fp8: {rate: 1300TFLOPS, half_rate_flops: 9GFLOP}  # the same for float8 (tensorwise)
//     gemm_fp8_precise: {rate: 1200TFLOPS, half_rate_flops: 9GFLOP}  # float8, precise accumulation
//     memory_bandwidth: 4.2TB/s                          # memory-bound kernels (HBM traffic)
//     kernel_launch: 3.5us
//   collectives:
//     nvlink:                                            # link class: nvlink (intra-node) | nic
//       all_gather: {base_latency: 8.4us, hop_latency: 1us, bus_bandwidth: 360GB/s}
//     nic:
//       all_reduce:                                      # size-aware: pieces by size
//         sizes:
//           - {from: 8MiB, base_latency: 316us, bus_bandwidth: 183GB/s}
//           - {from: 45MiB, base_latency: 0us, bus_bandwidth: 99.5GB/s}
//
// Every entry is optional: what a calibration leaves out keeps the topology's figure.
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/param_spec.hpp"

namespace shardsim::config {

// A GEMM of F FLOPs takes (F + half_rate_flops) / rate: the efficiency curve
// eff(F) = eff_max x F / (F + F_half), which is half its maximum at F = F_half.
struct GemmCalibration {
  double rate = 0;             // FLOP/s reached by large GEMMs
  double half_rate_flops = 0;  // FLOPs at which a GEMM reaches half that rate
};

// One size range of a size-aware collective calibration: from `from_bytes` up to the next piece's.
struct CollectivePiece {
  double from_bytes = 0;
  double base_latency = 0;   // seconds
  double hop_latency = 0;    // seconds per ring step
  double bus_bandwidth = 0;  // bytes/s
};

// A collective of total size S over n ranks in a ring of `steps` steps (n-1; 2(n-1) for
// all-reduce) takes  base_latency + steps x hop_latency + S x f(n) / bus_bandwidth, where
// f = (n-1)/n, or 2(n-1)/n for all-reduce (nccl-tests' bus bandwidth; nccl-model.md).
//
// Size-aware form (`sizes:` in the file; what `shardsim calibrate` fits to nccl-tests curves,
// whose bus bandwidth rises and falls with size): the piece with the largest from_bytes <= S
// gives the three figures for S; sizes below the first piece's were not measured and keep the
// topology's model. Without pieces the three figures price every size.
struct CollectiveCalibration {
  double base_latency = 0;             // seconds
  double hop_latency = 0;              // seconds per ring step
  double bus_bandwidth = 0;            // bytes/s
  std::vector<CollectivePiece> sizes;  // by from_bytes; empty: one model for every size

  // The figures for a collective of `bytes`; nullopt below the sizes measured.
  [[nodiscard]] std::optional<CollectivePiece> at(double bytes) const;
};

enum class LinkClass { nvlink, nic };
inline constexpr int kLinkClasses = 2;
inline constexpr int kCollectiveKinds = 3;  // all_gather, reduce_scatter, all_reduce

[[nodiscard]] std::string_view to_string(LinkClass c);

struct CalibrationConfig {
  std::filesystem::path file;
  std::string name;
  std::optional<GemmCalibration> gemm;              // bf16 / fp16 (the run's low-precision GEMMs)
  std::optional<GemmCalibration> gemm_fp8;          // float8 e4m3 with tensorwise scales (training.float8), fast accumulation
  std::optional<GemmCalibration> gemm_fp8_precise;  // the same, precise accumulation (torchao's gradient GEMMs)
  std::optional<double> attention_forward_rate;     // FLOP/s
  std::optional<double> attention_backward_rate;    // FLOP/s
  std::optional<double> memory_bandwidth;           // bytes/s of HBM traffic
  std::optional<double> kernel_launch;              // seconds per kernel
  // [link class][all_gather, reduce_scatter, all_reduce]
  std::array<std::array<std::optional<CollectiveCalibration>, kCollectiveKinds>, kLinkClasses> collectives{};

  [[nodiscard]] bool has_collectives() const;
};

// Names of the collective kinds as calibration files spell them, in the array's order.
inline constexpr std::array<std::string_view, kCollectiveKinds> kCollectiveKindNames{"all_gather", "reduce_scatter", "all_reduce"};

// What a calibration replaces, for run summaries: "gemm, memory bandwidth; all_reduce over nic
// (from 8 MiB)".
[[nodiscard]] std::string calibration_coverage(const CalibrationConfig& c);

// Loads and checks a calibration file; errors name file:line:col and the key path.
[[nodiscard]] CalibrationConfig load_calibration(const std::filesystem::path& file);

// Calibration settings, for `shardsim describe calibration`.
[[nodiscard]] std::vector<Schema> calibration_schemas();

}  // namespace shardsim::config
