// Measured GEMMs beside the compute model (`shardsim calibrate --topology FILE`): each sample's time
// as the topology's nominal model prices it (engine::RooflineModel), and, for shapes timed in both
// bf16 and float8 (shardsim-bench --fp8), the float8 speed-up measured against the model's: whether
// the topology's float8 rates hold at those shapes, before any calibration replaces them. Where the
// samples hold every GEMM of the reference block (a Llama 3 8B block at 16,384 tokens, the block
// gpu.efficiency.matmul describes), the fractions of peak the topology's float8 efficiencies take.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/topology.hpp"
#include "validate/bench_data.hpp"

namespace shardsim::cli {

struct GemmCheckRow {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  validate::GemmPrecision precision = validate::GemmPrecision::bf16;
  double measured = 0;  // seconds
  double modelled = 0;  // seconds; 0 where the topology has no rate for the type (float8 on a GPU without it)
  double flops = 0;     // all `batch` products'
};

struct GemmSpeedup {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  validate::GemmPrecision precision = validate::GemmPrecision::fp8;  // the float8 one's
  double measured = 0;                                               // bf16 time / float8 time
  double modelled = 0;
};

// The reference block measured in bf16 and float8 with both accumulations: FLOP rates over its
// 21 GEMMs (float8 fast) and over its 14 gradient GEMMs (fast and precise).
struct ReferenceBlockCheck {
  double bf16 = 0;               // FLOP/s, all 21
  double fp8 = 0;                // FLOP/s, all 21, fast accumulation
  double gradients_fast = 0;     // FLOP/s, the 14 gradient GEMMs, fast accumulation
  double gradients_precise = 0;  // the same, precise accumulation
  // gpu.efficiency.matmul_fp8 / matmul: (fp8 / peak fp8) / (bf16 / peak bf16).
  double fp8_share = 0;
  // gpu.efficiency.matmul_fp8_precise / matmul_fp8: gradients_precise / gradients_fast.
  double precise_share = 0;
};

struct GemmCheck {
  std::vector<GemmCheckRow> rows;
  std::vector<GemmSpeedup> speedups;  // shapes timed in both dtypes
  std::optional<ReferenceBlockCheck> reference;
};

[[nodiscard]] GemmCheck check_gemms(const validate::BenchResults& bench, const config::TopologyConfig& topology);
[[nodiscard]] std::string gemm_check_text(const GemmCheck& check, const config::TopologyConfig& topology);

}  // namespace shardsim::cli
