// Small constructors for modules and kernels, shared by the per-architecture block builders.
// Byte counts of memory-bound kernels model eager PyTorch: each elementwise op reads its inputs
// and writes its output once; the formulas are written next to each kernel.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "model/module.hpp"

namespace shardsim::model {

[[nodiscard]] Kernel matmul_kernel(std::string name, std::int64_t n, std::int64_t k);
[[nodiscard]] Kernel memory_kernel(std::string name, double bytes_per_token, int launches, double backward_factor = 2.0);
// `window` > 0: sliding-window attention, each query attending to itself and window - 1 keys before it.
[[nodiscard]] Kernel attention_kernel(std::string name, int heads, int kv_heads, int head_dim, bool causal, std::int64_t window = 0);
// A tensor-parallel collective of an activation of `bytes_per_token` (unsharded) per token.
[[nodiscard]] Kernel tp_comm_kernel(std::string name, TpComm forward, TpComm backward, double bytes_per_token);
// Megatron's conjugate pair around a column-parallel ... row-parallel region, over an activation
// of `bytes_per_token`: entering it all-gathers the sequence shards (sequence parallel; its
// backward reduce-scatters) or does nothing (its backward all-reduces); leaving it reduce-scatters
// (its backward all-gathers) or all-reduces (nothing in backward). `readers`: the column-parallel
// linears that read the entered activation. When the plan gathers per linear
// (TensorParallel::gather_per_linear) each reduces its input gradient itself in backward, and
// gathers the input itself in an eager forward; under torch.compile (`compiled`) AOTAutograd's
// CSE merges the identical forward gathers into one.
// Whether sequence parallelism's collectives reorder their tensor by a copy (DTensor's [b, s, h]
// activations; Kernel::tp_forward_reorders): compiled, the gradient reduce-scatter of a module
// input read by several linears does not, its cat fused with the sum of their input gradients.
[[nodiscard]] bool reorders(const TensorParallel& tp);
[[nodiscard]] Kernel tp_enter(std::string name, const TensorParallel& tp, double bytes_per_token, int readers = 1, bool compiled = false);
[[nodiscard]] Kernel tp_leave(std::string name, const TensorParallel& tp, double bytes_per_token);
// Scales the HBM traffic of a module's own memory kernels (a norm on 1/tp of the sequence).
void scale_memory_kernels(Module& m, double factor);
// Replaces a module's own memory kernels by one fused kernel of `bytes_per_token` (torch.compile).
void fuse_memory_kernels(Module& m, double bytes_per_token);

// nn.Linear(in, out[, bias]) with its matmul.
[[nodiscard]] Module linear(std::string name, std::int64_t in, std::int64_t out, bool bias);
// A tensor-parallel linear: this rank's `in` x `out` share of the model's `model_in` x `model_out`
// (column-parallel: out = model_out / t; row-parallel: in = model_in / t).
[[nodiscard]] Module sharded_linear(std::string name, std::int64_t in, std::int64_t out, bool bias, std::int64_t model_in,
                                    std::int64_t model_out);
// A norm over `dim` features. RMSNorm as torchtitan's eager implementation (upcast to fp32,
// pow, mean, rsqrt, mul, downcast, scale: 28 h + 4 a h bytes per token); LayerNorm as
// PyTorch's fused native_layer_norm (read and write once: 2 a h).
[[nodiscard]] Module rms_norm(std::string name, std::int64_t dim, int act_bytes);
[[nodiscard]] Module layer_norm(std::string name, std::int64_t dim, int act_bytes);
[[nodiscard]] Module embedding(std::string name, std::int64_t rows, std::int64_t dim, int act_bytes);

// Appends a child and its call to the parent's program; returns the child's index.
int add_child(Module& parent, Module child);
void add_kernel(Module& parent, Kernel k);

// Adds `delta` (bytes per token, per checkpointing mode) to what a block keeps for backward,
// keeping its backward transients consistent: what a mode does not keep is recomputed and alive
// while the block's backward runs (transient[mode] grows by delta[none] - delta[mode]).
void add_saved_activation(Module& block, const std::array<double, 3>& delta);

// Marks every second matmul of a block (in forward order, counting from the first as saved) and
// every memory kernel as recomputed under per-op selective checkpointing (torchtitan "op" SAC).
void mark_selective_recompute(Module& block);

}  // namespace shardsim::model
