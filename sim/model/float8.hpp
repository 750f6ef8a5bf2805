// Float8 training as torchao applies it (training.float8): which nn.Linear modules become
// Float8Linear, what their GEMMs run in, and the cast traffic each adds.
//
// convert_to_float8 follows torchtitan's converter: every Linear whose fully qualified name
// contains none of `skip` (default: "output") and whose per-rank in/out features are multiples
// of 16 (torch._scaled_mm's requirement) is converted.
//
// Cast traffic per converted linear and micro-batch, from torchao's own float8 roofline
// (torchao/testing/float8/roofline_utils.py, get_tensor_memory_traffic_ovhd_s): with M tokens,
// K input and N output features, X = M K input elements, W = N K weight elements, G = M N
// grad_output elements, bytes (bf16 read 2, float8 write 1 each):
//
//   recipe               input X (forward)        weight W (fwd | bwd)     grad_output G (backward)
//   tensorwise           amax 2 + cast 2+1+1      2+3 | 3                  amax 2 + cast 2+1+1
//   rowwise              2+1+2, then 2+1          3 | 4 + 3                as input, + rescales
//   rowwise_with_gw_hp   2+1                      3 | 3                    2+1
//   mxfp8                2+1+1                    3 | 3                    2+1+1
//
// Under torch.compile the first read of the input and of grad_output fuses into the kernel that
// produced them (torchao's fuse_with_prev: amax of tensorwise, the first pass of the others):
// 2 bytes per element less. A weight that FSDP2 all-gathers in float8 (fsdp_float8_all_gather,
// tensorwise) is cast on its shard before the all-gather instead of on the compute stream; its
// backward needs the transposed float8 copy: read 1, write 1.
// Under tensor parallelism torchtitan's tensorwise plan wraps the attention and feed-forward
// modules in torchao's PrepareFloat8ModuleInput (torchao/float8/float8_tensor_parallel.py: "so
// that if there are multiple float8 users of the input activation, we perform fp8 allgather only
// once"): the module's input is cast once, on the rank's sequence shard (amax, then a cast
// writing row-major float8 only: 2 + 1 bytes per element of the shard, the first read fused
// under compile), all-gathered in float8, and read by every column-parallel linear (wq, wk, wv;
// w1, w3); each of them transposes the gathered float8 input for its weight gradient in backward
// (read 1, write 1 per element of the whole input).
// Compiled, the linears that read one tensor (wq, wk, wv; w1, w3) cast it once: AOTAutograd's
// common-subexpression elimination on the joint graph (torch/_functorch/partitioners.py, functorch
// config `cse`, default on) merges their identical amax, cast and transpose ops, so the first of
// them carries the input's casts and its weight-gradient copy, the others none (eager, each
// linear casts its own).
// GEMMs: tensorwise float8 in all three (output, grad_input, grad_weight); rowwise the same with
// rowwise scales; rowwise_with_gw_hp keeps grad_weight in high precision; mxfp8 block-scaled.
// Rowwise's two backward GEMMs run without fast accumulation (Float8LinearConfig's default
// gemm_config_grad_input / grad_weight), and for such GEMMs with row scales on both operands
// torchao calls the tensorwise cuBLAS kernel with unit scales and rescales the output afterwards
// (torchao/float8/float8_ops.py addmm_float8_unwrapped, "the rowwise CUTLASS-based kernel is so
// slow without fast-accum"): one more kernel per GEMM reading and writing its bf16 output, which
// Inductor does not fold into the GEMM (pytorch/ao#2184): 4 bytes per element of grad_input
// (M K) and of grad_weight (N K).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/module.hpp"

namespace shardsim::model {

struct Float8Options {
  Float8Recipe recipe = Float8Recipe::none;
  bool fsdp_all_gather = false;             // FSDP2 all-gathers converted weights in float8
  bool compiled = false;                    // torch.compile fuses the casts with their producers
  std::vector<std::string> skip{"output"};  // module names containing any of these stay as they are
  bool auto_filter = false;                 // torchao's _auto_filter_for_recipe (too_small_to_gain)
  int act_bytes = 2;                        // bytes of an activation element (TP all-gathers)
  int tp = 1;                               // tensor-parallel degree
  bool sequence_parallel = false;           // the column-parallel linears' input is all-gathered from sequence shards
  bool gather_per_linear = false;           // each column-parallel linear gathers (and so casts) its input itself
};

struct Float8Conversion {
  int linears = 0;                // converted
  int skipped_by_shape = 0;       // features not multiples of 16
  int skipped_as_small = 0;       // kept by the auto filter (too_small_to_gain)
  std::int64_t params = 0;        // weights converted (one rank's)
  std::vector<int> skip_matches;  // per `skip` entry, the linears it kept out
};

// torchao's _auto_filter_for_recipe (torchao/float8/float8_linear_utils.py, pytorch/ao#2410): a
// weight of N x K (out x in features, as the model defines it) whose GEMMs are too small for
// float8 to outrun its casts, by thresholds torchao drew from its H100 microbenchmarks:
// tensorwise K <= 4,096 and N <= 1,024; rowwise N <= 2,048, or K <= 1,024, or N <= 4,096 and
// K <= 2,048. Other recipes have none (false).
[[nodiscard]] bool too_small_to_gain(Float8Recipe recipe, std::int64_t n, std::int64_t k);

// Converts the model's linears in place (matmul kernels, weights, TP all-gathers next to them).
Float8Conversion convert_to_float8(Module& root, const Float8Options& options);

// What a converted matmul's casts add to one micro-batch of `tokens` tokens. The column bytes are
// those of casts that scale along a tensor's columns (graph::Work::column_cast_bytes), counted
// apart from the bytes.
struct Float8Casts {
  double forward_bytes = 0;
  double forward_column_bytes = 0;
  int forward_launches = 0;
  double backward_bytes = 0;
  double backward_column_bytes = 0;
  int backward_launches = 0;
};
[[nodiscard]] Float8Casts float8_casts(const Kernel& matmul, std::int64_t tokens);

[[nodiscard]] std::string_view float8_recipe_name(Float8Recipe r);

}  // namespace shardsim::model
