// Builds the module tree of a transformer (parameters, kernels, activation memory) from its
// spec, and the model-level figures reports need (parameter counts, MFU FLOPs per token).
//
//   auto m = build_model(resolve_spec(cfg.model), /*seq_len=*/8192, /*act_bytes=*/2);
//   m.total_params();   // 8,030,261,248 for llama3.1-8b
#pragma once

#include <cstdint>

#include "model/module.hpp"
#include "model/transformer_spec.hpp"

namespace shardsim::model {

struct Model {
  TransformerSpec spec;
  Module root;
  std::int64_t seq_len = 0;
  int act_bytes = 2;  // bytes per activation element (the compute dtype)

  [[nodiscard]] std::int64_t total_params() const { return root.numel(); }
  [[nodiscard]] std::int64_t embedding_params() const;  // token and position embeddings
  [[nodiscard]] std::int64_t block_params() const;      // one transformer block

  // Model FLOPs per token for MFU, in the convention of PaLM (appendix B) and torchtitan:
  // 6 x non-embedding parameters + 12 x layers x heads x head_dim x seq_len. Recompute is not
  // counted, and attention is counted as if it were not causal.
  [[nodiscard]] double mfu_flops_per_token() const;
};

[[nodiscard]] Model build_model(const TransformerSpec& spec, std::int64_t seq_len, int act_bytes);

// Visits modules in PyTorch's named_modules() order (pre-order), with dotted names.
template <class F>
void for_each_module(const Module& m, const std::string& prefix, F&& f) {
  f(m, prefix);
  for (const auto& c : m.children) {
    for_each_module(c, prefix.empty() ? c.name : prefix + "." + c.name, f);
  }
}

}  // namespace shardsim::model
