#include "model/attention_impl.hpp"

#include "model/kernels.hpp"

namespace shardsim::model {
namespace {

// Calls f on every kernel of a module's subtree.
template <class F>
void for_each_kernel(Module& m, F&& f) {
  for (auto& item : m.program) {
    if (item.child >= 0) {
      for_each_kernel(m.children[static_cast<std::size_t>(item.child)], f);
    } else {
      f(item.kernel);
    }
  }
}

// Bytes per token an unfused attention kernel keeps for backward at sequence length `seq_len`.
double unfused_saved_bytes_per_token(const Kernel& k, std::int64_t seq_len) {
  const double a = k.score_bytes;
  const double per_score = a + (k.dropout > 0 ? a + 1 : 0);
  return static_cast<double>(k.heads) * static_cast<double>(seq_len) * per_score;
}

}  // namespace

void apply_unfused_attention(Module& m, std::int64_t seq_len, int act_bytes, double dropout) {
  if (!m.is_block) {
    for (auto& c : m.children) apply_unfused_attention(c, seq_len, act_bytes, dropout);
    return;
  }
  Module& block = m;
  double saved = 0;
  double lse = 0;
  for_each_kernel(block, [&](Kernel& k) {
    if (k.kind != KernelKind::attention) return;
    k.unfused = true;
    k.dropout = dropout;
    k.score_bytes = act_bytes;
    k.recomputed_by_selective = true;
    saved += unfused_saved_bytes_per_token(k, seq_len);
    lse += 4.0 * k.heads;
  });
  // The scores are kept without checkpointing and recomputed under either mode; no FlashAttention
  // logsumexp (4 bytes per head and token) is kept under none or selective.
  add_saved_activation(block, {saved - lse, -lse, 0});
}

}  // namespace shardsim::model
