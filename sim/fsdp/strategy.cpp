#include "fsdp/strategy.hpp"

namespace shardsim::fsdp {

ShardingTraits sharding_traits(config::Sharding s) {
  using config::Sharding;
  switch (s) {
    case Sharding::full_shard:
      return {true, true, false, true};
    case Sharding::shard_grad_op:
      return {true, false, false, true};
    case Sharding::no_shard:
      return {false, false, false, false, false};
    case Sharding::shard_optimizer:
      return {false, false, false, true, true};
    case Sharding::hybrid_shard:
      return {true, true, true, true};
    case Sharding::hybrid_shard_zero2:
      return {true, false, true, true};
    case Sharding::zero3:  // stage 3 shards parameters, gradients and optimizer state as FULL_SHARD does
      return {true, true, false, true};
  }
  return {};
}

}  // namespace shardsim::fsdp
