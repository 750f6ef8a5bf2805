// Context parallelism (parallelism.cp): each sequence split over cp ranks with load-balanced
// causal chunks, K and V all-gathered over the cp group before attention and their gradients
// reduce-scattered after its backward, FSDP sharding over dp_shard x cp. Bytes and FLOPs by hand.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "cli/pipeline.hpp"
#include "graph/groups.hpp"
#include "test_support.hpp"

using namespace shardsim;
using graph::OpKind;

namespace {

graph::Prepared prepare(const std::vector<std::string>& sets) {
  return cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", sets);
}

struct Totals {
  int gathers = 0;  // CP all-gathers
  int scatters = 0;
  double gather_bytes = 0;  // of one
  double attention_flops = 0;
  double gemm_flops = 0;
};

Totals totals(const graph::Prepared& p) {
  Totals t;
  for (std::size_t o = 0; o < p.graph.size(); ++o) {
    const auto& op = p.graph.op(static_cast<int>(o));
    if (op.group == graph::Group::cp) {
      CHECK(op.stream == graph::Stream::cp);
      if (op.kind == OpKind::all_gather) ++t.gathers, t.gather_bytes = op.bytes;
      if (op.kind == OpKind::reduce_scatter) ++t.scatters;
    }
    t.attention_flops += op.work.attention_flops(false) + op.work.attention_flops(true);
    t.gemm_flops += op.work.gemm_flops();
  }
  return t;
}

}  // namespace

TEST_CASE("context parallel: K and V gathered per attention, a rank's FLOPs 1/cp of the sequence's") {
  // The tiny Llama (4 layers, hidden 512, 8 heads of 64, no GQA), 512-token sequences, cp 2, no
  // checkpointing: per layer one all-gather of K and V, each 512 tokens x 512 x 2 B: 1 MiB
  // gathered (each rank receives the other's half), and one reduce-scatter of their gradients.
  const auto one = totals(prepare({"fsdp.version=2", "training.activation_checkpointing=none"}));
  const auto two = totals(prepare({"fsdp.version=2", "training.activation_checkpointing=none", "parallelism.cp=2"}));
  CHECK(one.gathers == 0);
  CHECK(two.gathers == 4);
  CHECK(two.scatters == 4);
  CHECK(two.gather_bytes == 2.0 * 512 * 512 * 2);
  // Half the queries against every key (load-balanced causal chunks), half the tokens in every GEMM.
  CHECK(two.attention_flops == doctest::Approx(one.attention_flops / 2));
  CHECK(two.gemm_flops == doctest::Approx(one.gemm_flops / 2));
  // Full checkpointing reruns the forward's gather in backward.
  CHECK(totals(prepare({"fsdp.version=2", "training.activation_checkpointing=full", "parallelism.cp=2"})).gathers == 8);
}

TEST_CASE("context parallel: the groups and the tokens per GPU") {
  // 16 GPUs, tp 2, cp 2: a CP group is two ranks tp apart, FSDP shards over the 8 ranks of one
  // TP index (dp_shard 4 x cp 2); a CP group shares its sequences: tokens per GPU per step are
  // micro_batch x seq_len / (cp x tp) = 1 x 512 / 4.
  const auto p = prepare({"fsdp.version=2", "cluster.nodes=2", "parallelism.tp=2", "parallelism.cp=2"});
  const graph::Groups groups(p.graph.info);
  CHECK(groups.members(graph::Group::cp, groups.instance_of(graph::Group::cp, 0)) == std::vector<int>{0, 2});
  CHECK(groups.members(graph::Group::cp, groups.instance_of(graph::Group::cp, 5)) == std::vector<int>{5, 7});
  CHECK(groups.size(graph::Group::shard) == 8);
  CHECK(p.graph.info.tokens_per_micro_step == 512 / 4);
}

TEST_CASE("context parallel: a longer sequence over more ranks keeps a rank's tokens and its activation memory") {
  // seq 512 at cp 1 and seq 1024 at cp 2: each rank holds 512 tokens, so the activations it
  // saves are the same (the gathered K and V are transient and not counted here).
  const auto saved = [](const graph::Prepared& p) {
    double bytes = 0;
    for (std::size_t o = 0; o < p.graph.size(); ++o) {
      const auto& op = p.graph.op(static_cast<int>(o));
      if (op.kind != OpKind::forward) continue;
      for (const auto& m : op.memory) {
        if (m.category == graph::MemCategory::activations && m.bytes > 0) bytes += m.bytes;
      }
    }
    return bytes;
  };
  const double one = saved(prepare({"fsdp.version=2"}));
  const double two = saved(prepare({"fsdp.version=2", "training.seq_len=1024", "parallelism.cp=2"}));
  REQUIRE(one > 0);
  CHECK(two == doctest::Approx(one));
}
