// Attention by implementation (training.attention) and dropout (training.dropout).
//
// flash (the default): one fused kernel per call, forward and backward (graph::AttentionCall,
// priced at the GPU's attention rates); the s x s scores never reach HBM.
//
// unfused: the scores materialized, as SDPA's math backend and Megatron-LM's CoreAttention before
// --use-flash-attn run it (megatron/model/transformer.py, 2021-2023). Per sequence and head, with
// s queries and keys, head size d and E = s^2 score elements of a bytes (graph/work.cpp):
//   forward   QK^T    batched GEMM m = s, n = s, k = d (the scale is baddbmm's alpha)
//             softmax scale, causal mask and softmax in one kernel (Megatron's
//                     scaled_upper_triang_masked_softmax): read and write the scores  2aE
//             dropout (p > 0): read, write, a 1-byte mask                          (2a + 1)E
//             PV      batched GEMM m = s, n = d, k = s
//   backward  dP = dO V^T  m = s, n = s, k = d;   dV = P^T dO  m = s, n = d, k = s
//             dropout backward (p > 0): read the gradient and the mask, write      (2a + 1)E
//             softmax backward: read the gradient and the probabilities, write     3aE
//             dQ = dS K  m = s, n = d, k = s;     dK = dS^T Q  m = s, n = d, k = s
// All of s x s is computed: the causal mask zeroes the upper triangle, it skips none of it.
// Kept for backward without checkpointing: the probabilities (aE), with dropout also the dropped
// probabilities and the mask ((a + 1)E), i.e. heads x s x (a [+ a + 1]) bytes per token.
// Per-op selective checkpointing recomputes all of it (none of its ops is on torchtitan's save
// list, and Megatron's selective recompute is exactly this core); full checkpointing recomputes
// it with the block, so it is alive while that block's backward runs.
//
// Dropout on the residual branches (GPT blocks, p > 0): Megatron-LM's fused bias-dropout-add
// writes a 1-byte mask per element in forward; its backward reads the gradient and the mask and
// writes the gradient, (2a + 1) bytes (model/blocks.cpp).
#pragma once

#include <cstdint>

#include "model/module.hpp"

namespace shardsim::model {

// Marks the attention kernels of every block in `m` (the model's root, or one block) unfused,
// with dropout p on their probabilities, and adds what they keep for backward to each block's
// activation memory.
void apply_unfused_attention(Module& m, std::int64_t seq_len, int act_bytes, double dropout);

}  // namespace shardsim::model
