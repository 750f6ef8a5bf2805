// FSDP applied to a model: the units (what each holds, padded and sharded sizes), the sharding
// groups, and the forward execution trace (which unit's compute runs when, where units are
// entered and left) from which the graph layer builds one training step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "fsdp/strategy.hpp"
#include "fsdp/wrap_policy.hpp"
#include "model/transformer.hpp"

namespace shardsim::fsdp {

struct Unit {
  int index = 0;
  std::string name;                  // "root", "layers.0", "layers.0-3"
  std::vector<std::string> modules;  // dotted module paths wrapped together ("" for the root)
  int parent = -1;                   // enclosing unit (-1 for the root)
  std::int64_t numel = 0;            // parameters it holds
  int tensors = 0;                   // how many parameter tensors (nn.Parameters) those are
  // Of numel and tensors, the linears' weights: what a weight-gradient GEMM produces (Megatron's
  // gradient_accumulation_fusion adds into its buffer there; the rest by backward hooks).
  std::int64_t gemm_weight_numel = 0;
  int gemm_weights = 0;
  std::int64_t padded_numel = 0;  // as all-gathered: a multiple of the shard group size
  std::int64_t shard_numel = 0;   // per rank
  bool is_root = false;
  bool reshard_after_forward = true;
  int reshard_to = 0;                 // FSDP2 reshard_after_forward = d: keep a 1/d shard (0: free everything)
  std::int64_t persistent_numel = 0;  // ZeRO-3: parameters below the persistence threshold, never partitioned
  // FSDP2 float8 all-gather (training.float8): of padded_numel, the weights gathered in float8
  // (1 byte each), and how many weights those are (each has its own scale).
  std::int64_t float8_padded_numel = 0;
  int float8_weights = 0;
  // Elements per rank of each tensor the optimizer keeps state for, in the order it creates that
  // state: FSDP2's per-parameter shards (dim 0 padded), else the unit's one flat parameter.
  std::vector<std::int64_t> optimizer_tensors;
};

// A run of consecutive kernels that belong to one unit, with the activation memory of the
// modules whose forward starts in it.
struct Segment {
  int unit = 0;
  std::string name;  // "layers.3", "layers.3.attention" (innermost module)
  std::vector<model::Kernel> kernels;
  bool in_block = false;   // inside a transformer block: activation checkpointing applies
  int block = -1;          // which block (0-based), -1 outside blocks
  std::int64_t numel = 0;  // parameters of the unit used by these kernels (their gradients appear here)
  bool is_loss = false;    // the loss: its buffers are reported as logits and loss memory
  bool tp_comm = false;    // a tensor-parallel collective (its one kernel), not compute
  model::Activation activation;
};

struct TraceEvent {
  enum class Kind { enter, compute, exit };
  Kind kind = Kind::compute;
  int unit = 0;
  int segment = -1;  // index into Plan::segments for compute events
};

struct Plan {
  std::vector<Unit> units;  // [0] is the root; the rest in forward order
  std::vector<Segment> segments;
  std::vector<TraceEvent> forward;  // enter/compute/exit in forward order
  ShardingTraits traits;
  int world_size = 1;
  int tp_group = 1;                                  // tensor parallelism: ranks splitting each block (consecutive ranks)
  int pp_group = 1;                                  // pipeline stages (the plan is one stage's)
  int shard_group = 1;                               // ranks a parameter is sharded over
  int replicate_group = 1;                           // ranks holding the same shard (hybrid: nodes)
  int reshard_group = 1;                             // FSDP2 reshard_after_forward = d
  int param_bytes = 4;                               // all-gathered parameters and compute (mixed precision param dtype)
  int reduce_bytes = 4;                              // gradient reduction dtype
  int master_bytes = 4;                              // sharded parameters and gradients as stored
  int grad_bytes = 4;                                // unsharded gradients as produced by backward (compute dtype)
  config::DType reduce_dtype = config::DType::fp32;  // of reduce_bytes: FSDP2 divides an fp16 reduction itself

  [[nodiscard]] std::int64_t total_numel() const;
  [[nodiscard]] std::int64_t max_unit_padded_numel() const;
};

// Wraps the model as the scenario says (for sharding: zero3, every module that owns parameters
// is a unit, as DeepSpeed fetches per submodule). Throws ConfigError for settings that cannot apply
// (an unknown wrap policy, hybrid sharding on one node, ...).
[[nodiscard]] Plan make_plan(const model::Model& model, const config::ScenarioConfig& scenario, const WrapPolicyRegistry& policies);

// FSDP1's flat parameter: numel padded up to a multiple of the group (chunk(W) pads every rank to
// ceil(numel / W)). FSDP2 pads each parameter's dim 0 instead.
[[nodiscard]] std::int64_t flat_padded_numel(std::int64_t numel, int group);
[[nodiscard]] std::int64_t dim0_padded_numel(const std::vector<std::int64_t>& shape, int group);

}  // namespace shardsim::fsdp
