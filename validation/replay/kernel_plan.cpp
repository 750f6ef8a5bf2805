#include "replay/kernel_plan.hpp"

#include <algorithm>
#include <cmath>

namespace shardsim::replay {

namespace {

// The keys tile i of `tiles` attends to on average under causal attention: the mean over its
// queries x of min(x, window), continuous as graph::AttentionCall::keys_per_query counts them
// ((i + 1/2) tiles of keys without a window).
double causal_keys(const graph::AttentionCall& a, std::int64_t i, std::int64_t tiles) {
  const double s = static_cast<double>(a.seq), n = static_cast<double>(tiles);
  if (!a.windowed()) return (static_cast<double>(i) + 0.5) * s / n;
  const double lo = s * static_cast<double>(i) / n, hi = s * static_cast<double>(i + 1) / n;
  const auto w = static_cast<double>(a.window);
  if (hi <= w) return (lo + hi) / 2;
  if (lo >= w) return w;
  return ((w * w - lo * lo) / 2 + w * (hi - w)) / (hi - lo);  // the tile holds the window's edge
}

}  // namespace

std::vector<GemmKernel> attention_kernels(const graph::AttentionCall& a) {
  // Context parallelism's ring: the rank's 1/cp of the queries (load-balanced, so no staircase)
  // against one step's keys, half of them under the causal mask: one tile.
  const bool ring = a.cp > 1 || a.steps > 1;
  // Tiles of 256 queries or more, at most 8: enough for the causal staircase, few launches.
  const std::int64_t tiles = a.causal && !ring ? std::clamp<std::int64_t>(a.seq / 256, 1, 8) : 1;
  const std::int64_t batch = a.batch * a.heads;
  const std::int64_t d = a.head_dim;
  const std::int64_t queries = std::max<std::int64_t>(1, a.seq / a.cp);
  std::vector<GemmKernel> out;
  for (std::int64_t i = 0; i < tiles; ++i) {
    const std::int64_t q0 = queries * i / tiles;
    const std::int64_t q = queries * (i + 1) / tiles - q0;
    const auto kv = ring       ? std::max<std::int64_t>(1, std::llround(a.keys_per_query()))
                    : a.causal ? std::max<std::int64_t>(1, std::llround(causal_keys(a, i, tiles)))
                               : a.seq;
    if (!a.backward) {
      out.push_back({batch, q, kv, d});  // S = Q K^T
      out.push_back({batch, q, d, kv});  // O = P V
    } else {
      out.push_back({batch, q, kv, d});  // recompute S
      out.push_back({batch, q, kv, d});  // dP = dO V^T
      out.push_back({batch, kv, d, q});  // dV = P^T dO
      out.push_back({batch, q, d, kv});  // dQ = dS K
      out.push_back({batch, kv, d, q});  // dK = dS^T Q
    }
  }
  return out;
}

std::vector<Kernel> compute_kernels(const graph::Work& w) {
  std::vector<Kernel> out;
  // Float8 GEMMs of every recipe run as cuBLASLt's tensorwise-scaled e4m3 kernel (the CPU
  // backend runs them as its float GEMM), with the graph's accumulation: rowwise and MXFP8 scales
  // are not set up.
  for (const auto& g : w.gemms) out.emplace_back(GemmKernel{1, g.m, g.n, g.k, validate::harness_precision(g)});
  for (const auto& a : w.attention) {
    for (const auto& g : attention_kernels(a)) out.emplace_back(g);
  }
  // Column-wise casts (rowwise float8's) run as plain copies: their uncoalesced reads are not replayed.
  if (w.memory_bytes + w.column_cast_bytes > 0) out.emplace_back(CopyKernel{w.memory_bytes + w.column_cast_bytes});
  const auto launched = static_cast<int>(out.size());
  for (int i = launched; i < w.launches; ++i) out.emplace_back(EmptyKernel{});
  return out;
}

void KernelFootprint::add(const Kernel& k) {
  if (const auto* g = std::get_if<GemmKernel>(&k)) {
    gemm_a = std::max(gemm_a, g->batch * g->m * g->k);
    gemm_b = std::max(gemm_b, g->batch * g->n * g->k);
    gemm_c = std::max(gemm_c, g->batch * g->m * g->n);
  } else if (const auto* c = std::get_if<CopyKernel>(&k)) {
    copy_bytes = std::max(copy_bytes, c->bytes / 2);
  }
}

}  // namespace shardsim::replay
