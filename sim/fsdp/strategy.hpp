// What each sharding strategy does, as data the graph builder follows
// (shared/reference/fsdp-semantics.md section 4).
#pragma once

#include "config/scenario.hpp"

namespace shardsim::fsdp {

struct ShardingTraits {
  bool shards_params = true;          // parameters are sharded (an all-gather before use)
  bool reshard_after_forward = true;  // freed after forward, gathered again in backward
  bool hybrid = false;                // shard within a node, replicate across nodes
  bool reduce_scatter = true;         // gradients reduce-scattered (else all-reduced)
  bool shards_optimizer = true;       // optimizer state sharded (everything but DDP)
};

// FULL_SHARD: AG in forward and backward, RS. SHARD_GRAD_OP: AG once, kept until backward ends.
// NO_SHARD: DDP-style all-reduce. shard_optimizer (ZeRO-1): DDP's buckets reduce-scattered, the
// optimizer step on 1/dp of the parameters, the updated parameters all-gathered. HYBRID_SHARD(_ZERO2): as the first two within a node, plus an
// all-reduce of the shard across nodes.
[[nodiscard]] ShardingTraits sharding_traits(config::Sharding s);

}  // namespace shardsim::fsdp
