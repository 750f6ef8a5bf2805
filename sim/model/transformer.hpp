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
  Module root;  // as one rank holds it: with tensor parallelism, its 1/tp of each split weight
  std::int64_t seq_len = 0;
  int act_bytes = 2;  // bytes per activation element (the compute dtype)
  TensorParallel tp;
  bool compiled = false;  // torch.compile per block (training.compile)

  // The whole model's parameters (every tensor-parallel rank's together), as a model card counts.
  [[nodiscard]] std::int64_t total_params() const { return total_params_; }
  [[nodiscard]] std::int64_t embedding_params() const { return embedding_params_; }  // token and position embeddings
  [[nodiscard]] std::int64_t rank_params() const { return root.numel(); }            // what one rank holds
  [[nodiscard]] std::int64_t block_params() const;                                   // one transformer block, as one rank holds it

  // Model FLOPs per token for MFU, in the convention of PaLM (appendix B) and torchtitan:
  // 6 x non-embedding parameters + 12 x layers x heads x head_dim x seq_len. Recompute is not
  // counted, and attention is counted as if it were not causal.
  [[nodiscard]] double mfu_flops_per_token() const;

 private:
  friend Model build_model(const TransformerSpec& spec, std::int64_t seq_len, int act_bytes, const BlockOptions& options);
  std::int64_t total_params_ = 0;
  std::int64_t embedding_params_ = 0;
};

// Throws std::invalid_argument for a tensor-parallel split the model does not allow (the caller
// checks first, with the scenario's location: graph/prepare.cpp).
[[nodiscard]] Model build_model(const TransformerSpec& spec, std::int64_t seq_len, int act_bytes, const BlockOptions& options = {});

// The logits' columns on one tensor-parallel rank, what the loss runs over: its vocabulary shard
// under loss_parallel with the output layer split (ceil(V / t)), else all V.
[[nodiscard]] std::int64_t loss_vocab(const TransformerSpec& s, const TensorParallel& tp);

// Visits modules in PyTorch's named_modules() order (pre-order), with dotted names.
template <class F>
void for_each_module(const Module& m, const std::string& prefix, F&& f) {
  f(m, prefix);
  for (const auto& c : m.children) {
    for_each_module(c, prefix.empty() ? c.name : prefix + "." + c.name, f);
  }
}

}  // namespace shardsim::model
