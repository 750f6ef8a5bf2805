// Context parallelism (parallelism.cp): each sequence split over cp ranks with load-balanced
// causal chunks, attention as torch's ring attention (cp equal steps, K and V all-gathered or
// passed around the ring, their gradients passed around it in fp32), FSDP sharding over
// dp_shard x cp. Bytes and FLOPs by hand.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <array>
#include <string>
#include <vector>

#include "cli/pipeline.hpp"
#include "graph/groups.hpp"
#include "report/outputs.hpp"
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
  int kv_sends = 0;         // K/V passed to the next rank (alltoall)
  double kv_send_bytes = 0;
  int grad_sends = 0;  // dK/dV passed to the next rank
  double grad_send_bytes = 0;
  int steps = 0;  // ring attention steps (forward and backward)
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
      const bool grad = op.name.find("dK dV") != std::string::npos;
      if (op.kind == OpKind::send && !grad) ++t.kv_sends, t.kv_send_bytes = op.bytes;
      if (op.kind == OpKind::send && grad) ++t.grad_sends, t.grad_send_bytes = op.bytes;
    }
    if (op.name.find(" ring step ") != std::string::npos) ++t.steps;
    t.attention_flops += op.work.attention_flops(false) + op.work.attention_flops(true);
    t.gemm_flops += op.work.gemm_flops();
  }
  return t;
}

}  // namespace

TEST_CASE("context parallel: ring attention in cp steps, a rank's FLOPs 1/cp of the sequence's") {
  // The tiny Llama (4 layers, hidden 512, 8 heads of 64, no GQA), 512-token sequences, cp 2, no
  // checkpointing. A rank holds 256 tokens; its K and V are 256 x 512 x 2 B each, 0.5 MiB, and
  // all of them gathered 1 MiB. Per layer, allgather: one gather in forward and one in backward
  // (torch's backward gathers again), 2 forward and 2 backward steps, and 2 sends of the rank's
  // dK and dV in fp32 (1 MiB each); no reduce-scatter.
  const auto one = totals(prepare({"fsdp.version=2", "training.activation_checkpointing=none"}));
  const auto two = totals(prepare({"fsdp.version=2", "training.activation_checkpointing=none", "parallelism.cp=2"}));
  CHECK(one.gathers == 0);
  CHECK(one.steps == 0);
  CHECK(two.gathers == 4 * 2);
  CHECK(two.scatters == 0);
  CHECK(two.gather_bytes == 2.0 * 512 * 512 * 2);
  CHECK(two.steps == 4 * (2 + 2));
  CHECK(two.grad_sends == 4 * 2);
  CHECK(two.grad_send_bytes == 2.0 * 256 * 512 * 4);
  // alltoall: K and V passed on once per pass (cp - 1 sends of one rank's 0.5 MiB), no gather.
  const auto ring =
      totals(prepare({"fsdp.version=2", "training.activation_checkpointing=none", "parallelism.cp=2", "parallelism.cp_rotate=alltoall"}));
  CHECK(ring.gathers == 0);
  CHECK(ring.kv_sends == 4 * 2);
  CHECK(ring.kv_send_bytes == 2.0 * 256 * 512 * 2);
  CHECK(ring.grad_sends == 4 * 2);
  // Half the queries against every key (load-balanced causal chunks), in equal steps; half the
  // tokens in every GEMM.
  CHECK(two.attention_flops == doctest::Approx(one.attention_flops / 2).scale(0));
  CHECK(ring.attention_flops == doctest::Approx(one.attention_flops / 2).scale(0));
  CHECK(two.gemm_flops == doctest::Approx(one.gemm_flops / 2).scale(0));
  // Full checkpointing reruns the forward's ring (its gather and steps) in backward.
  const auto full = totals(prepare({"fsdp.version=2", "training.activation_checkpointing=full", "parallelism.cp=2"}));
  CHECK(full.gathers == 4 * 3);
  CHECK(full.steps == 4 * (2 + 2 + 2));
}

TEST_CASE("context parallel: each ring step waits only for its own K and V") {
  // alltoall, cp 2: the first forward step (own K/V) starts without the send; the second starts
  // after it. The backward's dK/dV addition of step 2 waits for step 1's send, not its attention.
  const auto p = prepare(
      {"fsdp.version=2", "training.activation_checkpointing=none", "parallelism.cp=2", "parallelism.cp_rotate=alltoall", "model.layers=1"});
  const auto& g = p.graph;
  const auto fed_by_send = [&](int id) {
    for (const auto& [pred, kind] : g.predecessors(id)) {
      if (g.op(pred).kind == OpKind::send) return true;
    }
    return false;
  };
  std::vector<int> forward_steps;
  for (std::size_t o = 0; o < g.size(); ++o) {
    const auto& op = g.op(static_cast<int>(o));
    if (op.kind == OpKind::forward && op.name.find(" ring step ") != std::string::npos) forward_steps.push_back(op.id);
  }
  REQUIRE(forward_steps.size() == 2);
  CHECK_FALSE(fed_by_send(forward_steps[0]));
  CHECK(fed_by_send(forward_steps[1]));
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
  // saves are the same (the ring's buffers are freed within the forward: net, they are none).
  const auto saved = [](const graph::Prepared& p) {
    double bytes = 0;
    for (std::size_t o = 0; o < p.graph.size(); ++o) {
      const auto& op = p.graph.op(static_cast<int>(o));
      if (op.kind != OpKind::forward) continue;
      for (const auto& m : op.memory) {
        if (m.category == graph::MemCategory::activations) bytes += m.bytes;
      }
    }
    return bytes;
  };
  const double one = saved(prepare({"fsdp.version=2"}));
  const double two = saved(prepare({"fsdp.version=2", "training.seq_len=1024", "parallelism.cp=2"}));
  REQUIRE(one > 0);
  CHECK(two == doctest::Approx(one).scale(0));
}

TEST_CASE("context parallel: the memory the ring holds while it runs") {
  // The tiny Llama (hidden 512, no GQA), one layer, 512-token sequences at cp 4: a rank holds 128
  // tokens, its queries (and attention output) q = 128 x 512 x 2 B = 131,072 B, its K and V
  // kv = 2q = 262,144 B. torch's _templated_ring_attention and its backward
  // (torch/distributed/tensor/experimental/_attention.py) hold, from the first step to the last:
  //   forward, allgather: the gathered K/V (4 kv) and the concatenation it gathered (kv), and the
  //   merger's fp32 output (2q): 5 x 262,144 + 262,144 = 1,572,864 B; alltoall: the copy sent, the
  //   one arriving and the one in use (3 kv) + 2q = 1,048,576 B;
  //   backward: the same K/V buffers, fp32 dQ (2q) and dK, dV (2 kv) accumulators, the dK / dV
  //   concatenation sent (2 kv) and the one arriving (2 kv): allgather 5 kv + 2q + 6 kv =
  //   3,145,728 B;
  // and during each step: forward its output, that in fp32 and the merge's two fp32 temporaries
  // (7q = 917,504 B); backward the step's dQ, dK, dV (q + kv = 393,216 B).
  const auto ring = [](const std::string& rotate, OpKind kind) {
    const auto p = prepare({"fsdp.version=2", "training.activation_checkpointing=none", "parallelism.cp=4", "model.layers=1",
                            "parallelism.cp_rotate=" + rotate});
    std::vector<std::vector<graph::MemEffect>> steps;
    for (std::size_t o = 0; o < p.graph.size(); ++o) {
      const auto& op = p.graph.op(static_cast<int>(o));
      if (op.kind == kind && op.name.find(" ring step ") != std::string::npos) steps.push_back(op.memory);
    }
    return steps;
  };
  const auto check = [](const std::vector<std::vector<graph::MemEffect>>& steps, double held, double step) {
    REQUIRE(steps.size() == 4);
    double net = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      double at_start = 0;  // what the step allocates as it starts
      for (const auto& m : steps[i]) {
        CHECK(m.category == graph::MemCategory::activations);
        net += m.bytes;
        if (!m.at_end) at_start += m.bytes;
      }
      CHECK(at_start == (i == 0 ? held + step : step));
    }
    CHECK(net == 0);  // all freed by the last step's end
  };
  check(ring("allgather", OpKind::forward), 1572864, 917504);
  check(ring("alltoall", OpKind::forward), 1048576, 917504);
  check(ring("allgather", OpKind::backward), 3145728, 393216);
  check(ring("alltoall", OpKind::backward), 3 * 262144.0 + 2 * 131072 + 6 * 262144, 393216);
}

TEST_CASE("context parallel: the ring's eager copies and merges, in bytes by hand") {
  // The tiny Llama (hidden 512, 8 heads of 64, no GQA), one layer, 512-token sequences, no
  // checkpointing. Per element of a rank's queries (E = tokens x 512), priced for the CP group's
  // last rank, as read in torch's _templated_ring_attention and its backward
  // (torch/distributed/tensor/experimental/_attention.py): forward, K and V made contiguous (8),
  // the first output to fp32 (6), K and V concatenated before every step but the last (8), each
  // later step's merge (block to fp32 6, out - block 12, x sigmoid 8, out - that 12: 38), the
  // result back to bf16 (6); backward, K and V contiguous again (8), fp32 dQ, dK, dV zeroed (12),
  // the K/V concatenation before every step but the last (8), dQ added each step (10), dK and dV
  // added whole at the first step (20) and by halves then concatenated back at the later ones
  // (10 + 16), concatenated for each send (16), and the own gradient and dQ cast back (18).
  //   cp 2 (E = 256 x 512): forward 22 + 44 = 66 E; backward 38 + 36 + 10 + 42 + 18 = 144 E;
  //   cp 4 (E = 128 x 512): forward 22 + 46 + 46 + 44 = 158 E; backward 38 + 36 + 2 x (18 + 42)
  //   + 10 + 42 + 18 = 264 E.
  const auto traffic = [](int cp) {
    const auto p =
        prepare({"fsdp.version=2", "training.activation_checkpointing=none", "model.layers=1", fmt::format("parallelism.cp={}", cp)});
    std::array<double, 2> bytes{0, 0};  // forward, backward
    for (std::size_t o = 0; o < p.graph.size(); ++o) {
      const auto& op = p.graph.op(static_cast<int>(o));
      const bool ring = op.name.find(" ring step ") != std::string::npos || op.name.find(" dK dV") != std::string::npos;
      if (!ring || op.stream != graph::Stream::compute) continue;
      bytes[op.kind == OpKind::forward ? 0 : 1] += op.work.memory_bytes;
    }
    return bytes;
  };
  const double e2 = 256.0 * 512;
  const double e4 = 128.0 * 512;
  const auto two = traffic(2);
  const auto four = traffic(4);
  CHECK(two[0] == doctest::Approx(66 * e2).scale(0));
  CHECK(two[1] == doctest::Approx(144 * e2).scale(0));
  CHECK(four[0] == doctest::Approx(158 * e4).scale(0));
  CHECK(four[1] == doctest::Approx(264 * e4).scale(0));
}

TEST_CASE("context parallel: the summary's parameter all-gathers leave out the ring's K and V") {
  // FSDP shards over dp_shard x cp, so cp 2 (dp_shard 4) gathers the same parameters over the same
  // 8 ranks as cp 1: the same bytes, although the graph also all-gathers K and V at every attention.
  const auto gathered = [](std::vector<std::string> sets) {
    return test::in_child([sets] { return cli::simulate(prepare(sets)).summary.all_gather_bytes; });
  };
  const double one = gathered({"fsdp.version=2"});
  const double two = gathered({"fsdp.version=2", "training.seq_len=1024", "parallelism.cp=2"});
  REQUIRE(totals(prepare({"fsdp.version=2", "training.seq_len=1024", "parallelism.cp=2"})).gathers > 0);
  REQUIRE(one > 0);
  CHECK(two == doctest::Approx(one).scale(0));
}

TEST_CASE("context parallel: the summary names the rotation the scenario asks for") {
  // cp_rotate allgather gathers every rank's K and V once per attention; alltoall passes them
  // around the ring (torch's _AllGatherRotater and _AllToAllRotater).
  struct Says {
    bool gathered = false;
    bool ring = false;
    bool exposed = false;
  };
  const auto says = [](const std::string& rotate) {
    return test::in_child([rotate] {
      const auto p = prepare({"fsdp.version=2", "training.seq_len=1024", "parallelism.cp=2", "parallelism.cp_rotate=" + rotate});
      const std::string text = report::summary_text(cli::simulate(p).summary, p.scenario);
      const auto has = [&text](std::string_view what) { return text.find(what) != std::string::npos; };
      return Says{has("split over 2 ranks (512 tokens each), K and V gathered per attention"),
                  has("split over 2 ranks (512 tokens each), K and V passed around the ring per attention"),
                  has("of which context parallel")};
    });
  };
  const Says gathered = says("allgather");
  const Says ring = says("alltoall");
  CHECK(gathered.gathered);
  CHECK_FALSE(gathered.ring);
  CHECK(ring.ring);
  CHECK_FALSE(ring.gathered);
  CHECK(ring.exposed);
}
