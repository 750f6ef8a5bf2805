// The three ways the validation harness runs a GEMM, each timed by shardsim-bench and fitted as its
// own curve by `shardsim calibrate` (compute.gemm, gemm_fp8, gemm_fp8_precise): bf16 operands, or
// float8 e4m3 with tensorwise scales (torchao's tensorwise recipe, torch._scaled_mm) accumulating
// fast, in the tensor cores' own precision (use_fast_accum=True: torchao's output GEMM), or
// precisely, partial sums promoted to fp32 as the kernel goes (use_fast_accum=False: its
// grad_input and grad_weight GEMMs). Outputs are bf16 and accumulation fp32 in all three.
#pragma once

#include <cstdint>
#include <string_view>

#include "graph/op.hpp"

namespace shardsim::validate {

enum class GemmPrecision : std::uint8_t { bf16, fp8, fp8_precise };

[[nodiscard]] constexpr bool is_fp8(GemmPrecision p) {
  return p != GemmPrecision::bf16;
}

// "bf16", "fp8", "fp8 precise": how tables and messages name it.
[[nodiscard]] constexpr std::string_view label(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::bf16:
      return "bf16";
    case GemmPrecision::fp8:
      return "fp8";
    case GemmPrecision::fp8_precise:
      return "fp8 precise";
  }
  return "?";
}

// How the harness runs a graph's GEMM: every float8 recipe as tensorwise e4m3 (the one float8
// kernel it has), with the GEMM's own accumulation.
[[nodiscard]] constexpr GemmPrecision harness_precision(const graph::Gemm& g) {
  if (g.type == graph::GemmType::high) return GemmPrecision::bf16;
  return g.precise_accum ? GemmPrecision::fp8_precise : GemmPrecision::fp8;
}

// The graph GEMM a harness GEMM of this precision prices as (float8 recipes as tensorwise).
[[nodiscard]] constexpr graph::Gemm graph_gemm(std::int64_t m, std::int64_t n, std::int64_t k, GemmPrecision p) {
  return graph::Gemm{m, n, k, is_fp8(p) ? graph::GemmType::fp8 : graph::GemmType::high, p == GemmPrecision::fp8_precise};
}

}  // namespace shardsim::validate
