// What a compute op runs when it is replayed: the op's GEMMs with their real shapes, its
// attention calls as batched GEMMs, one copy for its memory-bound traffic, and empty kernels for
// the rest of its launches. Shared by every backend, so that the GPU and the CPU run the same
// kernels (the CPU scaled down).
//
// Attention is run as GEMMs of the same FLOPs, not as a fused FlashAttention kernel: the query is
// cut into T tiles, and for causal attention tile i attends to (i + 1/2) tiles of keys, which
// sums to exactly half of the full s x s product (graph::AttentionCall::flops); under a sliding
// window of w keys a tile attends to the mean of min(x, w) over its queries x. Forward: S = QK^T
// and O = PV per tile (2 GEMMs); backward: recompute S, dP = dO V^T, dV = P^T dO, dQ = dS K,
// dK = dS^T Q (5 GEMMs, 2.5x the forward, as FlashAttention-2's backward).
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "graph/op.hpp"
#include "validate/gemm_precision.hpp"

namespace shardsim::replay {

// y[m, n] = x[m, k] W[n, k]^T, `batch` times over strided buffers, in one of the harness's three
// precisions (validate/gemm_precision.hpp: bf16, or float8 e4m3 with tensorwise scales as torchao's
// tensorwise recipe runs torch._scaled_mm, accumulating fast or precisely); bf16 output.
struct GemmKernel {
  std::int64_t batch = 1;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  validate::GemmPrecision precision = validate::GemmPrecision::bf16;
  [[nodiscard]] double flops() const {
    return 2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

// A device-to-device copy of bytes / 2 bytes: `bytes` of memory traffic (read + write).
struct CopyKernel {
  double bytes = 0;
};

// A kernel that does nothing: the launch cost of the op's small kernels.
struct EmptyKernel {};

using Kernel = std::variant<GemmKernel, CopyKernel, EmptyKernel>;

// The kernels of one attention call (see above).
[[nodiscard]] std::vector<GemmKernel> attention_kernels(const graph::AttentionCall& a);

// The kernels of a compute op's work, in the order they run.
[[nodiscard]] std::vector<Kernel> compute_kernels(const graph::Work& w);

// Largest buffers a backend needs for these kernels: elements of A, B and C of one GEMM
// (batch included), and bytes of one copy's source.
struct KernelFootprint {
  std::int64_t gemm_a = 0;
  std::int64_t gemm_b = 0;
  std::int64_t gemm_c = 0;
  double copy_bytes = 0;
  void add(const Kernel& k);
};

}  // namespace shardsim::replay
