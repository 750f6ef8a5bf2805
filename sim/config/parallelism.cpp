// The `parallelism` section: the device mesh in torchtitan's names. Tensor parallelism is
// modelled; context and pipeline parallelism, async TP and explicit data-parallel degrees other
// than what fsdp.sharding implies are refused rather than ignored.
#include <fmt/format.h>

#include <array>

#include "config/sections.hpp"

namespace shardsim::config {
namespace {

constexpr std::array kParallelismParams{
    ParamSpec{"tp", "integer", "1",
              "tensor-parallel degree: each block's linears split over tp consecutive ranks (Megatron column/row parallel, "
              "torchtitan's ColwiseParallel / RowwiseParallel); llama models",
              Range{1, 1 << 16}},
    ParamSpec{"tp_sequence_parallel", "bool", "true",
              "with tp: norms and residuals on sequence shards, all-gather / reduce-scatter around attention and MLP instead "
              "of all-reduce (torchtitan's default)"},
    ParamSpec{"tp_async", "bool", "false", "async TP (collective matmul); not modelled yet, only false is accepted"},
    ParamSpec{"dp_shard", "integer", "-1",
              "ranks a parameter is sharded over; -1: what fsdp.sharding implies (all data-parallel ranks, a node's for "
              "hybrid sharding, 1 for no_shard; shard_optimizer shards the optimizer state over all); another value must equal it",
              Range{-1, 1 << 20}},
    ParamSpec{"dp_replicate", "integer", "-1", "replicas of each shard (hybrid sharding's nodes, no_shard's ranks); -1: implied",
              Range{-1, 1 << 20}},
    ParamSpec{"cp", "integer", "1", "context-parallel degree; not modelled yet, only 1 is accepted", Range{1, 1 << 16}},
    ParamSpec{"pp", "integer", "1", "pipeline-parallel degree; not modelled yet, only 1 is accepted", Range{1, 1 << 16}},
};
constexpr Schema kParallelismSchema{"parallelism", "the device mesh: data, tensor, context and pipeline parallel degrees",
                                    kParallelismParams};

}  // namespace

ParallelismConfig read_parallelism(const Reader& top, std::vector<ConfigWarning>& warnings) {
  ConfigNode scratch;
  Reader r(section(top, "parallelism", scratch), "parallelism", kParallelismSchema);
  r.finish();
  ParallelismConfig p;
  p.where = r.where("tp");
  p.tp = static_cast<int>(r.integer("tp"));
  p.sequence_parallel = r.boolean("tp_sequence_parallel");
  if (p.tp == 1 && r.has("tp_sequence_parallel")) {
    warnings.push_back({r.where("tp_sequence_parallel"), "parallelism.tp_sequence_parallel",
                        "sequence parallelism applies with tensor parallelism (tp > 1); it is ignored"});
  }
  if (r.boolean("tp_async")) r.fail("tp_async", "async tensor parallelism (collective matmul) is not modelled yet; expected false");
  if (r.integer("cp") > 1) r.fail("cp", "context parallelism is not modelled yet; expected 1");
  if (r.integer("pp") > 1) r.fail("pp", "pipeline parallelism is not modelled yet; expected 1");
  for (const char* key : {"dp_shard", "dp_replicate"}) {
    const std::int64_t v = r.integer(key);
    if (v == 0) r.fail(key, "expected -1 (implied by fsdp.sharding) or a degree >= 1; got 0");
    if (v > 0) (std::string_view(key) == "dp_shard" ? p.dp_shard : p.dp_replicate) = {static_cast<int>(v), r.where(key)};
  }
  return p;
}

void check_parallelism(const ScenarioConfig& s) {
  const ParallelismConfig& p = s.parallelism;
  const std::int64_t world = s.world_size();
  const int gpus = s.cluster.topology.node.gpus;
  if (world % p.tp != 0) {
    throw ConfigError(p.where, "parallelism.tp", fmt::format("{} does not divide the {} GPUs; expected a divisor of the world size", p.tp, world));
  }
  const std::int64_t dp = world / p.tp;
  if (p.tp > 1 && s.fsdp.sharding == Sharding::zero3) {
    throw ConfigError(p.where, "parallelism.tp", "tensor parallelism with DeepSpeed ZeRO-3 is not modelled; expected tp: 1 or an fsdp.sharding of FSDP");
  }
  const bool hybrid = s.fsdp.sharding == Sharding::hybrid_shard || s.fsdp.sharding == Sharding::hybrid_shard_zero2;
  if (hybrid && p.tp > 1 && gpus % p.tp != 0) {
    throw ConfigError(p.where, "parallelism.tp",
                      fmt::format("hybrid sharding shards over the data-parallel ranks of a node, but tp {} does not divide the node's {} "
                                  "GPUs; expected a divisor of {}",
                                  p.tp, gpus, gpus));
  }
  // What fsdp.sharding implies over the data-parallel ranks (plan.cpp builds the groups).
  std::int64_t shard = dp;
  if (s.fsdp.sharding == Sharding::no_shard || world == 1) shard = 1;
  if (hybrid && world > 1) shard = std::min<std::int64_t>(gpus / p.tp, dp);
  const std::int64_t replicate = dp / shard;
  const auto check = [&](const std::optional<Located<int>>& given, const char* key, std::int64_t implied) {
    if (given && given->value != implied) {
      throw ConfigError(given->where, fmt::format("parallelism.{}", key),
                        fmt::format("{}, but fsdp.sharding: {} over {} data-parallel ranks ({} GPUs / tp {}) gives {} = {}; expected -1 or {} "
                                    "(change fsdp.sharding to change the data-parallel layout)",
                                    given->value, to_string(s.fsdp.sharding), dp, world, p.tp, key, implied, implied));
    }
  };
  check(p.dp_shard, "dp_shard", shard);
  check(p.dp_replicate, "dp_replicate", replicate);
}

std::vector<Schema> parallelism_schemas() {
  return {kParallelismSchema};
}

}  // namespace shardsim::config
