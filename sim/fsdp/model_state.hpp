// Bytes of model state each rank keeps: parameter shards, gradient shards, optimizer state.
// With fp32 storage and Adam this is the seed's 4 + 4 + 8 = 16 bytes per parameter divided by
// the ranks a parameter is sharded over (DDP: 1); with pure bf16 training (training.dtype: bf16)
// it is 2 + 2 + 4 = 8, the seed's use_bf16 case.
#pragma once

#include "config/scenario.hpp"

namespace shardsim::fsdp {

struct ModelStateBytes {
  double params = 0;
  double grads = 0;
  double optimizer = 0;
  [[nodiscard]] double total() const { return params + grads + optimizer; }
};

// Optimizer state tensors per parameter: Adam and AdamW keep two moments; plain SGD none.
[[nodiscard]] int optimizer_states(config::Optimizer o);

// Whether the optimizer step runs fused (training.optimizer_impl; auto: torch.optim's foreach
// default, fused under zero3, shard_optimizer and Megatron-LM's DDP, whose frameworks step with
// DeepSpeed's or Megatron-LM's FusedAdam).
[[nodiscard]] bool fused_optimizer(const config::ScenarioConfig& s);

// HBM traffic of one optimizer step per parameter, with gradient-norm clipping (foreach norm and
// scale: read the gradient, then read and write it, 12 B). torch's foreach AdamW does lerp
// (12 B), mul + addcmul on exp_avg_sq (20 B), weight decay (8 B), sqrt, div, add eps (24 B),
// addcdiv into the parameter (16 B): 80 B in fp32. Fused (torch's _fused_adamw_, apex's and
// DeepSpeed's multi_tensor_adam) reads the parameter, gradient and both moments and writes the
// parameter and moments once: 28 B. torch.optim.Adam's foreach step, at its default weight_decay
// of 0, skips the decay op (adam.py _multi_tensor_adam: `if weight_decay != 0`): 72 B; AdamW's
// default is 0.01. Scaled by storage bytes / 4 for bf16 state.
[[nodiscard]] double optimizer_bytes_per_param(config::Optimizer o, bool fused, int storage_bytes);

// Bytes per parameter the step allocates and frees again: foreach Adam(W)'s out-of-place sqrt of
// exp_avg_sq (torch/optim/adam.py _multi_tensor_adam, exp_avg_sq_sqrt), one tensor of the state's
// size per parameter; none fused or for SGD.
[[nodiscard]] double optimizer_temporary_bytes_per_param(config::Optimizer o, bool fused, int storage_bytes);

[[nodiscard]] ModelStateBytes model_state_bytes(double params, int shard_ranks, int storage_bytes, config::Optimizer o);

}  // namespace shardsim::fsdp
