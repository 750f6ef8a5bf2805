#include "graph/op.hpp"

#include <array>

namespace shardsim::graph {

namespace {
constexpr std::array<std::string_view, kGemmTypes> kGemmTypeNames{"high", "fp8", "fp8_rowwise", "mxfp8"};
}  // namespace

std::string_view gemm_type_name(GemmType t) {
  return kGemmTypeNames[static_cast<std::size_t>(t)];
}

std::optional<GemmType> gemm_type_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kGemmTypeNames.size(); ++i) {
    if (kGemmTypeNames[i] == name) return static_cast<GemmType>(i);
  }
  return std::nullopt;
}

std::vector<ReferenceGemm> reference_block() {
  // Llama 3 8B's block: (out, in) features of wq, wk, wv, wo, w1, w3, w2, at 16,384 tokens.
  constexpr std::array<std::array<std::int64_t, 2>, 7> kLinears{
      {{4096, 4096}, {1024, 4096}, {1024, 4096}, {4096, 4096}, {14336, 4096}, {14336, 4096}, {4096, 14336}}};
  constexpr std::int64_t kTokens = 16384;
  std::vector<ReferenceGemm> out;
  for (const auto& [o, i] : kLinears) {
    out.push_back({Gemm{kTokens, o, i}, false});  // forward: K = in
    out.push_back({Gemm{kTokens, i, o}, true});   // grad_input: K = out
    out.push_back({Gemm{o, i, kTokens}, true});   // grad_weight: K = tokens
  }
  return out;
}

double AttentionCall::flops() const {
  // QK^T and PV: 2 matmuls of 2 s^2 d per head; causal attention skips the masked half, a
  // sliding window the keys before it.
  const double s = static_cast<double>(seq);
  double f = 0;
  if (windowed()) {
    f = 4.0 * static_cast<double>(batch) * s * heads * head_dim * keys_per_query();
  } else {
    f = 4.0 * static_cast<double>(batch) * s * s * heads * head_dim;
    if (causal) f *= 0.5;
  }
  f /= cp;     // load-balanced causal sharding gives every rank the same share of the work
  f /= steps;  // and every step of its ring the same share of that (one K/V chunk pair each)
  // FlashAttention-2 backward recomputes S = QK^T and does dV, dP, dS->dQ, dK: 5 matmuls vs 2.
  return backward ? 2.5 * f : f;
}

bool AttentionCall::windowed() const {
  // Context parallelism's ring attention takes no window: the loader refuses the two together.
  return window > 0 && window < seq && causal && cp == 1 && steps == 1;
}

double AttentionCall::keys_per_query() const {
  const double s = static_cast<double>(seq);
  if (windowed()) {
    // Query i sees min(i, w) keys: w s - w^2 / 2 in all, the same continuous count as s^2 / 2.
    const auto w = static_cast<double>(window);
    return w - w * w / (2 * s);
  }
  const double keys = s / steps;
  return causal ? keys / 2 : keys;
}

double Work::gemm_flops() const {
  double f = 0;
  for (const auto& g : gemms) f += g.flops();
  return f;
}

double Work::attention_flops(bool backward) const {
  double f = 0;
  for (const auto& a : attention) {
    if (a.backward == backward) f += a.flops();
  }
  return f;
}

Work& Work::operator+=(const Work& o) {
  gemms.insert(gemms.end(), o.gemms.begin(), o.gemms.end());
  attention.insert(attention.end(), o.attention.begin(), o.attention.end());
  memory_bytes += o.memory_bytes;
  column_cast_bytes += o.column_cast_bytes;
  launches += o.launches;
  pcie_bytes += o.pcie_bytes;
  host_bytes += o.host_bytes;
  nvme_read_bytes += o.nvme_read_bytes;
  nvme_write_bytes += o.nvme_write_bytes;
  return *this;
}

ComputeSplit& ComputeSplit::operator+=(const ComputeSplit& o) {
  gemm += o.gemm;
  attention += o.attention;
  memory += o.memory;
  launch += o.launch;
  other += o.other;
  return *this;
}

int collective_index(OpKind k) {
  switch (k) {
    case OpKind::all_gather:
      return 0;
    case OpKind::reduce_scatter:
      return 1;
    case OpKind::all_reduce:
      return 2;
    default:
      return -1;
  }
}

std::string_view to_string(OpKind k) {
  constexpr std::array names{"all_gather", "reduce_scatter", "all_reduce", "forward",   "backward",
                             "copy",       "optimizer",      "cpu_wait",   "host_copy", "send"};
  return names[static_cast<std::size_t>(k)];
}
std::string_view to_string(Stream s) {
  constexpr std::array names{"compute", "nccl", "all_gather", "reduce_scatter", "all_reduce", "cpu",
                             "h2d",     "d2h",  "tp",         "nvme",           "pp",         "cp"};
  return names[static_cast<std::size_t>(s)];
}
std::string_view to_string(Group g) {
  constexpr std::array names{"none", "shard", "replicate", "world", "reshard", "tp", "pp", "cp"};
  return names[static_cast<std::size_t>(g)];
}
std::string_view to_string(EdgeKind e) {
  constexpr std::array names{"data", "stream", "prefetch", "rate_limit", "cpu"};
  return names[static_cast<std::size_t>(e)];
}
std::string_view to_string(MemCategory c) {
  constexpr std::array names{"sharded_params",  "unsharded_params", "gradients", "reduce_buffers", "grad_shards",
                             "optimizer_state", "activations",      "loss",      "workspaces",     "pipeline_buffers"};
  return names[static_cast<std::size_t>(c)];
}
std::string_view to_string(Pool p) {
  constexpr std::array names{"compute", "all_gather", "reduce_scatter", "all_reduce", "host"};
  return names[static_cast<std::size_t>(p)];
}

}  // namespace shardsim::graph
