// Small constructors for modules and kernels, shared by the per-architecture block builders.
// Byte counts of memory-bound kernels model eager PyTorch: each elementwise op reads its inputs
// and writes its output once; the formulas are written next to each kernel.
#pragma once

#include <cstdint>
#include <string>

#include "model/module.hpp"

namespace shardsim::model {

[[nodiscard]] Kernel matmul_kernel(std::string name, std::int64_t n, std::int64_t k);
[[nodiscard]] Kernel memory_kernel(std::string name, double bytes_per_token, int launches, double backward_factor = 2.0);
[[nodiscard]] Kernel attention_kernel(std::string name, int heads, int kv_heads, int head_dim, bool causal);

// nn.Linear(in, out[, bias]) with its matmul.
[[nodiscard]] Module linear(std::string name, std::int64_t in, std::int64_t out, bool bias);
// A norm over `dim` features. RMSNorm as torchtitan's eager implementation (upcast to fp32,
// pow, mean, rsqrt, mul, downcast, scale: 28 h + 4 a h bytes per token); LayerNorm as
// PyTorch's fused native_layer_norm (read and write once: 2 a h).
[[nodiscard]] Module rms_norm(std::string name, std::int64_t dim, int act_bytes);
[[nodiscard]] Module layer_norm(std::string name, std::int64_t dim, int act_bytes);
[[nodiscard]] Module embedding(std::string name, std::int64_t rows, std::int64_t dim, int act_bytes);

// Appends a child and its call to the parent's program; returns the child's index.
int add_child(Module& parent, Module child);
void add_kernel(Module& parent, Kernel k);

// Marks every second matmul of a block (in forward order, counting from the first as saved) and
// every memory kernel as recomputed under per-op selective checkpointing (torchtitan "op" SAC).
void mark_selective_recompute(Module& block);

}  // namespace shardsim::model
