// Symmetric mode against full mode, and stragglers: who waits for whom.
#include <doctest/doctest.h>

#include <algorithm>

#include "collective_support.hpp"
#include "engine/rank_layout.hpp"
#include "engine/scenario_run.hpp"
#include "fixtures/fixtures.hpp"
#include "graph/issuer.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

struct Figures {
  double step = 0;
  int simulated = 0;
  int top_rank = -1;      // the rank that made others wait most
  double top_caused = 0;  // how long
};

Figures run(std::vector<std::string> sets) {
  return test::in_child([sets] {
    const auto r = engine::simulate(test::prepared("tests/data/tiny_llama.yaml", sets));
    // One step (FSDP1 without forward prefetch): the step time is the makespan.
    Figures f{r.timeline.makespan(), r.timeline.simulated(), -1, 0};
    // The rank that held collectives up longest (the sum of its holding intervals is enough to rank).
    for (std::size_t rank = 0; rank < r.holding.size(); ++rank) {
      double held = 0;
      for (const auto& i : r.holding[rank]) held += i.end - i.start;
      if (held > f.top_caused) f.top_rank = static_cast<int>(rank), f.top_caused = held;
    }
    return f;
  });
}

std::vector<std::string> with(std::vector<std::string> base, std::vector<std::string> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

}  // namespace

TEST_CASE("symmetric mode simulates one rank and agrees with full mode where ranks are alike") {
  for (const auto& layout : std::vector<std::vector<std::string>>{{"cluster.nodes=4"}, {"cluster.nodes=4", "fsdp.sharding=hybrid_shard"}}) {
    const Figures full = run(with(layout, {"simulation.mode=full"}));
    const Figures sym = run(with(layout, {"simulation.mode=symmetric"}));
    CHECK(full.simulated == 32);
    CHECK(sym.simulated == 1);
    CHECK(sym.step == doctest::Approx(full.step).epsilon(0.01).scale(0));
  }
}

TEST_CASE("symmetric mode agrees with full mode on an NVLink mesh") {
  // Nodes of 4 H200 wired pairwise: TP 2 runs over one pair link, the shard group across nodes.
  for (const auto& layout : std::vector<std::vector<std::string>>{{"parallelism.tp=2"}, {"parallelism.tp=4"}, {"parallelism.pp=2"}}) {
    CAPTURE(layout.front());
    const auto base = with({"cluster.topology=h200_sxm_4x_ib400", "cluster.nodes=4", "fsdp.version=2"}, layout);
    const Figures full = run(with(base, {"simulation.mode=full"}));
    const Figures sym = run(with(base, {"simulation.mode=symmetric"}));
    CHECK(full.simulated == 16);
    CHECK(sym.step == doctest::Approx(full.step).epsilon(1e-12).scale(0));
  }
}

TEST_CASE("symmetric mode agrees with full mode where a context-parallel ring spans nodes") {
  // TP 8 fills each node, so the CP group of 4 is one GPU on each of the 4 nodes: its ring's
  // dK/dV (and, with alltoall, K/V) go as sends from every member to the next across nodes. Folded,
  // only the first node's send stands for them (each other one's would load its NIC again: 2.4 x
  // the time before that was so).
  for (const char* rotate : {"parallelism.cp_rotate=allgather", "parallelism.cp_rotate=alltoall"}) {
    CAPTURE(rotate);
    const std::vector<std::string> base{"cluster.nodes=4",  "fsdp.version=2",        "parallelism.tp=8",
                                        "parallelism.cp=4", "training.seq_len=4096", rotate};
    const Figures full = run(with(base, {"simulation.mode=full"}));
    const Figures sym = run(with(base, {"simulation.mode=symmetric"}));
    CHECK(sym.simulated == 1);
    CHECK(sym.step == doctest::Approx(full.step).epsilon(1e-12).scale(0));
  }
}

TEST_CASE("symmetric mode with pipeline stages simulates one rank per stage and agrees with full mode") {
  // 4 nodes of 8: every stage fills whole nodes (pp 2: 16 GPUs, pp 4: 8). The representatives'
  // pipeline sends cross from one stage's node to the next's, as the full platform's do.
  struct Layout {
    int pp;
    std::vector<std::string> sets;
  };
  // clang-format off
  const std::vector<Layout> layouts{
      {2, {"parallelism.tp=8"}},
      {2, {"parallelism.tp=4", "training.micro_batch=4"}},
      {2, {"parallelism.tp=2", "parallelism.pp_schedule=interleaved_1f1b", "parallelism.pp_stages_per_rank=2", "training.micro_batch=4"}},
      {4, {"parallelism.pp_schedule=zbv", "parallelism.pp_stages_per_rank=2", "training.micro_batch=4", "model.layers=8"}},
      {2, {"parallelism.tp=2", "parallelism.cp=2", "fsdp.version=2", "training.seq_len=1024"}},
      {2, {"fsdp.version=2", "fsdp.sharding=hybrid_shard"}},
      {2, {"parallelism.tp=2", "model.arch=gpt", "model.kv_heads=8", "model.tie_embeddings=true"}}};  // the tied gradients' all-reduce between stages
  // clang-format on
  for (const auto& layout : layouts) {
    CAPTURE(layout.sets.front());
    const auto base = with({"cluster.nodes=4", "parallelism.pp=" + std::to_string(layout.pp)}, layout.sets);
    const Figures full = run(with(base, {"simulation.mode=full"}));
    const Figures sym = run(with(base, {"simulation.mode=symmetric"}));
    CHECK(full.simulated == 32);
    CHECK(sym.simulated == layout.pp);
    CHECK(sym.step == doctest::Approx(full.step).epsilon(1e-12).scale(0));
  }
}

TEST_CASE("the CPU's dispatch cost gives the same step in symmetric and full mode and lengthens a small step") {
  // tiny_llama's kernels are microseconds long: at 20 us of CPU per kernel its step is CPU-bound
  // (FSDP1, with the rate limiter's CPU waits by default, without them, and with TP x PP).
  for (const auto& layout : std::vector<std::vector<std::string>>{{"cluster.nodes=4"},
                                                                  {"cluster.nodes=4", "fsdp.limit_all_gathers=false"},
                                                                  {"cluster.nodes=4", "parallelism.pp=2", "parallelism.tp=8"}}) {
    CAPTURE(layout.back());
    const Figures without = run(with(layout, {"simulation.mode=full"}));
    const auto cpu = with(layout, {"cluster.overrides.host.kernel_dispatch=20us"});
    const Figures full = run(with(cpu, {"simulation.mode=full"}));
    const Figures sym = run(with(cpu, {"simulation.mode=symmetric"}));
    CHECK(full.step > 1.5 * without.step);
    CHECK(sym.step == doctest::Approx(full.step).epsilon(1e-12).scale(0));
  }
}

namespace {

// 8 GPUs of one node: a 1 ms memory-bound op on each, then an 8-byte all-reduce over all of them.
// When the all-reduce started (the last rank's op ended) and ended.
struct Span {
  double start = 0;
  double end = 0;
};
Span op_then_all_reduce(double variation, std::uint64_t seed) {
  return test::in_child([=] {
    const auto topo = test::topology("h100_sxm_8x_ib400.yaml");
    const engine::RooflineModel compute(topo, true);
    const auto nccl = test::collectives(topo, test::collectives_settings());
    graph::StepGraph g;
    g.info.world_size = 8;
    g.info.shard_group = 8;
    graph::Op op = graph::make_op(graph::OpKind::forward, graph::Stream::compute, "FWD", -1);
    op.work.memory_bytes = 1e-3 * 3.35e12 * 0.85;  // 1 ms at the topology's achieved HBM bandwidth
    const int fwd = g.add_op(op);
    graph::Op ar = graph::make_op(graph::OpKind::all_reduce, graph::Stream::nccl, "AR", -1);
    ar.group = graph::Group::shard;
    ar.bytes = 8;
    const int id = g.add_op(ar);
    g.add_edge(fwd, id, graph::EdgeKind::data);
    engine::SimulationInput in{g, topo, 1, compute, nccl};
    in.stragglers.gpu_variation = variation;
    in.stragglers.seed = seed;
    const auto r = engine::simulate(in);
    return Span{r.timeline.at(id, 0).start, r.timeline.at(id, 0).end};
  });
}

}  // namespace

TEST_CASE("GPU-to-GPU variation: a collective waits for the slowest GPU's own factor") {
  // Each GPU keeps exp(sigma z) for the whole run, z = engine::normal(seed, -1, rank): the
  // all-reduce starts when the slowest of the 8 ends its 1 ms op, max exp(sigma z_r) ms.
  const double sigma = 0.05;
  double slowest = 0;
  for (int r = 0; r < 8; ++r) slowest = std::max(slowest, std::exp(sigma * engine::normal(7, -1, r)));
  const Span base = op_then_all_reduce(0, 7);
  const Span varied = op_then_all_reduce(sigma, 7);
  CHECK(base.start == doctest::Approx(1e-3).scale(0));
  CHECK(varied.start == doctest::Approx(slowest * 1e-3).epsilon(1e-9).scale(0));
  CHECK(varied.end - varied.start == doctest::Approx(base.end - base.start).epsilon(1e-9).scale(0));  // the collective itself is not slowed
  // Over seeds, ln(wait) / sigma is the maximum of 8 standard normals, whose mean is 1.4236 (the
  // expected maximum of n normals, integrated numerically; for n = 128: 2.5946, 1,024: 3.2482): the slowest of
  // n GPUs paces every collective, and n grows the wait like sigma sqrt(2 ln n).
  constexpr int kSeeds = 48;
  double sum = 0;
  for (int seed = 1; seed <= kSeeds; ++seed)
    sum += std::log(op_then_all_reduce(sigma, static_cast<std::uint64_t>(seed)).start / 1e-3) / sigma;
  CHECK(sum / kSeeds ==
        doctest::Approx(1.4236).epsilon(0.18).scale(0));  // standard deviation 0.61: standard error 0.088, the bound 2.9 of them
}

TEST_CASE("a slow GPU makes every other rank wait for it at each collective") {
  const Figures base = run({"simulation.mode=full"});
  const Figures slow = run({"simulation.mode=full", "stragglers.slow_gpus=[{rank: 5, factor: 1.5}]"});
  CHECK(slow.step > base.step * 1.2);
  CHECK(slow.top_rank == 5);
  CHECK(slow.top_caused > 0);
}

TEST_CASE("a degraded NIC slows the collectives that cross it") {
  // Two nodes: the shard ring crosses the NICs. A NIC at a tenth of its bandwidth is the ring's
  // bottleneck (the path flow runs at the pace of its slowest link).
  const Figures base = run({"cluster.nodes=2", "simulation.mode=full", "fsdp.mixed_precision=none"});
  const Figures degraded = run({"cluster.nodes=2", "simulation.mode=full", "fsdp.mixed_precision=none",
                                "stragglers.degraded_links=[{rank: 3, link: nic, factor: 0.1}]"});
  CHECK(degraded.step > base.step);
}

TEST_CASE("jitter is reproducible with its seed") {
  const Figures a = run({"simulation.mode=full", "stragglers.jitter=0.2", "stragglers.seed=7"});
  const Figures b = run({"simulation.mode=full", "stragglers.jitter=0.2", "stragglers.seed=7"});
  const Figures c = run({"simulation.mode=full", "stragglers.jitter=0.2", "stragglers.seed=8"});
  CHECK(a.step == b.step);
  CHECK(a.step != c.step);
}

TEST_CASE("symmetric mode refuses stragglers") {
  CHECK_THROWS_AS(
      (void)test::scenario("tests/data/tiny_llama.yaml",
                           std::vector<std::string>{"simulation.mode=symmetric", "stragglers.slow_gpus=[{rank: 1, factor: 2}]"}),
      ConfigError);
}

TEST_CASE("symmetric mode is refused where GPUs share a NIC across collective instances, kept where one group fills the node") {
  // p4de nodes: 8 A100s on 4 NICs, GPUs 2i and 2i + 1 on NIC i. FSDP over both nodes is one shard
  // group holding every GPU of each node: symmetric folds its paths onto node 0's NICs and agrees
  // with full mode. Hybrid sharding's replicate groups {r, r + 8} are eight instances, two on each
  // NIC: rank 0's would have its NIC to itself.
  const std::vector<std::string> p4de{"cluster.topology=aws_p4de_24xlarge_efa", "cluster.nodes=2"};
  const Figures full = run(with(p4de, {"simulation.mode=full"}));
  const Figures sym = run(with(p4de, {"simulation.mode=symmetric"}));
  CHECK(sym.simulated == 1);
  CHECK(sym.step == doctest::Approx(full.step).epsilon(1e-9).scale(0));
  CHECK(engine::link_shared_between_instances(test::prepared("tests/data/tiny_llama.yaml", p4de).graph,
                                              test::topology("aws_p4de_24xlarge_efa.yaml"), 2) == "");
  const auto hybrid = test::prepared("tests/data/tiny_llama.yaml", with(p4de, {"fsdp.sharding=hybrid_shard", "simulation.mode=symmetric"}));
  CHECK(engine::link_shared_between_instances(hybrid.graph, hybrid.scenario.cluster.topology, 2) ==
        "ranks 0 and 1 share a NIC (4 for 8 GPUs a node) in different replicate groups");
  CHECK_THROWS_WITH_AS(engine::check(hybrid), doctest::Contains("simulation.mode: symmetric simulates rank 0's collectives"), ConfigError);
  // TP 2 pairs share NICs with their own TP group, but the shard groups beside them ({0, 2, ...},
  // {1, 3, ...}) cross nodes, two on each NIC.
  const auto tp = test::prepared("tests/data/tiny_llama.yaml", with(p4de, {"parallelism.tp=2", "fsdp.version=2"}));
  CHECK(engine::link_shared_between_instances(tp.graph, tp.scenario.cluster.topology, 2) ==
        "ranks 0 and 1 share a NIC (4 for 8 GPUs a node) in different shard groups");
  // One node: the NICs carry nothing.
  CHECK(engine::link_shared_between_instances(hybrid.graph, hybrid.scenario.cluster.topology, 1) == "");
}

TEST_CASE("symmetric mode is refused where a node's oversubscribed uplinks carry several collective instances") {
  // One DGX H100 a leaf, 2:1 uplinks: every NIC of the node goes up through them. FSDP over both
  // nodes is one group and agrees with full mode; hybrid sharding's eight replicate groups share
  // the uplinks (symmetric came out 2.2 % short on 2 nodes before it was refused).
  const std::vector<std::string> two_to_one{"cluster.topology=h100_sxm_8x_ib400_fat_tree_2to1", "cluster.nodes=2"};
  const Figures full = run(with(two_to_one, {"simulation.mode=full"}));
  const Figures sym = run(with(two_to_one, {"simulation.mode=symmetric"}));
  CHECK(sym.step == doctest::Approx(full.step).epsilon(1e-9).scale(0));
  const auto hybrid = test::prepared("tests/data/tiny_llama.yaml", with(two_to_one, {"fsdp.sharding=hybrid_shard"}));
  CHECK(engine::link_shared_between_instances(hybrid.graph, hybrid.scenario.cluster.topology, 2) ==
        "ranks 0 and 1 share their node's 2:1 oversubscribed uplinks in different replicate groups");
}
