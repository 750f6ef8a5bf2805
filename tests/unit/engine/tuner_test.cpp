// The tuner (collectives::Collectives::select) against NCCL's cost model worked by hand: time =
// latency + bytes moved / bandwidth for every enabled (algorithm, protocol), the fastest wins.
// No simulation here: these are the choices and estimates plan() hands the engine.
//
// NCCL src/graph/tuning.cc constants, restated (us; LL / LL128 / Simple):
//   base latency      ring 6.6 / 14 / 8.4     tree 6.8 / 14 / 8.4     NVLS 0
//   NVLink step       ring 0.6 / 1.9 / 3.4    tree 0.6 / 1.25 / 4.0   NVLS 25 (Simple)
//   network step      ring 2.7 / 4.0 / 14     tree 5.0 / 8.5 / 14     NVLS_TREE 14
//   ring across nodes: an NVLink step costs at least 1 us (Intel) / 2 us (AMD), x3 for Simple
//   bandwidth         ring LL x0.5, LL128 x0.92; tree x0.92, then LL /3.8, LL128 x120/128 across
//                     nodes; NVLS x0.85 (Hopper) on NVLink
//   LL bus-bandwidth cap (llMaxBws)  Hopper, one node: 141 GB/s; AMD CPUs, two nodes: 22.5 GB/s
//   tree size correction (treeCorrectionFactor) for log2(S / 64) = 0 .. 22, then 1
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "collective_support.hpp"
#include "engine/collectives/patterns.hpp"

using namespace shardsim;
using graph::OpKind;

namespace {

constexpr double kUs = 1e-6;

using test::iota;

struct Candidate {
  std::string algorithm;
  std::string protocol;
  double time;
};

const Candidate& fastest(const std::vector<Candidate>& c) {
  return *std::min_element(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.time < b.time; });
}

void check_choice(const engine::collectives::Collectives& c, OpKind kind, int n, double bytes, const Candidate& expected) {
  CAPTURE(bytes);
  const auto s = c.select(kind, iota(n), bytes);
  CHECK(std::string(s.algorithm->name()) == expected.algorithm);
  CHECK(std::string(engine::collectives::to_string(s.protocol)) == expected.protocol);
  CHECK(s.time() == doctest::Approx(expected.time).epsilon(1e-9).scale(0));
}

// treeCorrectionFactor (tuning.cc), by protocol and log2(S / 64).
double tree_correction(int protocol, double bytes) {
  static constexpr std::array<std::array<double, 23>, 3> table{{
      {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
  }};
  const auto index = static_cast<int>(std::floor(std::log2(bytes / 64)));
  return index < 23 ? table[static_cast<std::size_t>(protocol)][static_cast<std::size_t>(std::max(index, 0))] : 1.0;
}

}  // namespace

TEST_CASE("8 x H100 all-gather: LL for small messages, LL128 for medium, Simple for large") {
  const auto c = test::collectives(test::topology("h100_sxm_8x_ib400.yaml"));
  const double nvl = 360e9;
  auto by_hand = [&](double s) {
    const double sent = 7.0 / 8.0 * s;  // per rank, ring
    return std::vector<Candidate>{
        {"ring", "ll", (6.6 + 7 * 0.6) * kUs + sent / std::min(0.5 * nvl, 141e9)},
        {"ring", "ll128", (14 + 7 * 1.9) * kUs + sent / (0.92 * nvl)},
        {"ring", "simple", (8.4 + 7 * 3.4) * kUs + sent / nvl},
        {"nvls", "simple", 25 * kUs + s / (0.85 * nvl)},  // S per GPU port
    };
  };
  CHECK(fastest(by_hand(64 * kKiB)).protocol == "ll");
  CHECK(fastest(by_hand(8 * kMiB)).protocol == "ll128");
  CHECK(fastest(by_hand(kGiB)).protocol == "simple");
  for (double s : {4 * kKiB, 64 * kKiB, 1 * kMiB, 8 * kMiB, 16 * kMiB, 64 * kMiB, kGiB})
    check_choice(c, OpKind::all_gather, 8, s, fastest(by_hand(s)));
  // The LL -> LL128 crossover: 10.8 + 7/8 S / 141 GB/s = 27.3 + 7/8 S / 331.2 GB/s, S = 4.63 MB.
  const double crossover = (27.3 - 10.8) * kUs / (7.0 / 8.0 * (1 / 141e9 - 1 / (0.92 * nvl)));
  CHECK(crossover == doctest::Approx(4.63e6).epsilon(0.01).scale(0));
  CHECK(c.select(OpKind::all_gather, iota(8), 0.95 * crossover).protocol == engine::collectives::Protocol::ll);
  CHECK(c.select(OpKind::all_gather, iota(8), 1.05 * crossover).protocol == engine::collectives::Protocol::ll128);
}

TEST_CASE("2 DGX A100 all-reduce: the tuner picks what NCCL's model says at every size") {
  const auto c = test::collectives(test::topology("a100_80gb_8x_ib200.yaml"));
  const double nvl = 231e9;          // 300 GB/s x 0.77
  const double nic = 24e9;           // 25 GB/s x 0.96
  const double ll_cap = 22.5e9;      // two nodes, AMD CPUs
  const double bus = 2.0 * 15 / 16;  // all-reduce bus bandwidth factor, 16 ranks
  auto by_hand = [&](double s) {
    // Ring: 28 NVLink steps and 2 network steps; each rank sends 2 x 15/16 S, 1/8 of it over its NIC.
    const double ring_bw = std::max(bus * s * 7 / 8 / nvl, bus * s / 8 / nic);
    auto ring = [&](double factor, double cap) { return std::max(ring_bw / factor, bus * s / cap); };
    // Tree: 2 x (7 NVLink steps + 1 network step); the chain moves 2 x 7/8 S per port, each NIC
    // S/8 each way; x0.92 and the protocol's factor and the size correction.
    const double tree_bw = std::max(2 * 7.0 / 8.0 * s / nvl, s / 8 / nic);
    auto tree = [&](int p, double factor, double cap) {
      return std::max(tree_bw / (0.92 * factor * tree_correction(p, s)), bus * s / cap);
    };
    const double inf = 1e300;
    return std::vector<Candidate>{
        {"tree", "ll", (6.8 + 2 * (7 * 0.6 + 5.0)) * kUs + tree(0, 1 / 3.8, ll_cap)},
        {"tree", "ll128", (14 + 2 * (7 * 1.25 + 8.5)) * kUs + tree(1, 120.0 / 128.0, inf)},
        {"tree", "simple", (8.4 + 2 * (7 * 4.0 + 14)) * kUs + tree(2, 1, inf)},
        // NVLink steps of a ring across nodes cost at least AMD's proxy overhead: 2, 2, 3 x 2 us.
        {"ring", "ll", (6.6 + 28 * 2.0 + 2 * 2.7) * kUs + ring(0.5, ll_cap)},
        {"ring", "ll128", (14 + 28 * 2.0 + 2 * 4.0) * kUs + ring(0.92, inf)},
        {"ring", "simple", (8.4 + 28 * 6.0 + 2 * 14) * kUs + ring(1, inf)},
    };
  };
  CHECK(fastest(by_hand(4 * kKiB)).algorithm == "tree");
  CHECK(fastest(by_hand(4 * kKiB)).protocol == "ll");
  CHECK(fastest(by_hand(kGiB)).algorithm == "tree");
  CHECK(fastest(by_hand(kGiB)).protocol == "simple");
  for (double s : {1 * kKiB, 4 * kKiB, 64 * kKiB, 256 * kKiB, 1 * kMiB, 4 * kMiB, 32 * kMiB, 256 * kMiB, kGiB, 4 * kGiB}) {
    check_choice(c, OpKind::all_reduce, 16, s, fastest(by_hand(s)));
  }
}

TEST_CASE("forcing: an algorithm for every collective, per kind, and a protocol") {
  const auto topo = test::topology("h100_sxm_8x_ib400.yaml");
  const auto ring_ll = test::collectives(topo, test::collectives_settings("ring", "ll"));
  for (double s : {kKiB, kGiB}) {
    const auto sel = ring_ll.select(OpKind::all_reduce, iota(16), s);
    CHECK(sel.algorithm->name() == "ring");
    CHECK(sel.protocol == engine::collectives::Protocol::ll);
  }
  auto settings = test::collectives_settings();
  settings.all_reduce.name = "tree";
  const auto tree_ar = test::collectives(topo, settings);
  CHECK(tree_ar.select(OpKind::all_reduce, iota(16), kGiB).algorithm->name() == "tree");
  CHECK(tree_ar.select(OpKind::all_gather, iota(16), kGiB).algorithm->name() == "ring");  // auto
  // Forced Simple on a single-node all-reduce: NVLS (Simple only) stays eligible and wins.
  const auto simple = test::collectives(topo, test::collectives_settings("auto", "simple"));
  CHECK(simple.select(OpKind::all_reduce, iota(8), kGiB).algorithm->name() == "nvls");
  CHECK(simple.select(OpKind::all_gather, iota(8), kKiB).protocol == engine::collectives::Protocol::simple);
}

TEST_CASE("hierarchical is never picked by auto, and forced it costs its phases' busiest link") {
  const auto topo = test::topology("h100_sxm_8x_ib400.yaml");
  const auto automatic = test::collectives(topo);
  for (const auto& cand : automatic.candidates(OpKind::all_reduce, iota(32), kGiB)) CHECK(cand.algorithm->name() != "hierarchical");
  const auto forced = test::collectives(topo, test::collectives_settings("hierarchical", "simple"));
  // 4 nodes x 8: reduce-scatter + all-gather inside nodes, 2 x 7/8 S per NVLink port; a ring of
  // 4 across nodes on S/8 per NIC: 2 x 3/4 x S/8. Latency: ring Simple constants for 2 x 7
  // NVLink and 2 x 3 network steps.
  const double s = kGiB;
  const double expected = (8.4 + 14 * 3.4 + 6 * 14) * kUs + std::max(2 * 7.0 / 8.0 * s / 360e9, 2 * 3.0 / 4.0 * s / 8 / 47.5e9);
  CHECK(forced.select(OpKind::all_reduce, iota(32), s).time() == doctest::Approx(expected).epsilon(1e-9).scale(0));
}

TEST_CASE("forced choices the cluster cannot run are input errors naming the setting") {
  const auto h100 = test::topology("h100_sxm_8x_ib400.yaml");
  const auto a100 = test::topology("a100_80gb_8x_ib200.yaml");
  CHECK_THROWS_WITH_AS(test::collectives(h100, test::collectives_settings("rnig")),
                       "<test>: error: collectives.algorithm: unknown collective algorithm \"rnig\"; expected one of auto, tree, ring, "
                       "nvls, hierarchical (did you mean \"ring\"?)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(test::collectives(h100, test::collectives_settings("nvls", "ll")),
                       "<test>: error: collectives.protocol: nvls has no ll protocol (NCCL runs it with simple)", ConfigError);
  const auto tree = test::collectives(h100, test::collectives_settings("tree"));
  const auto g = test::collectives_graph(16, 16, {test::collective_op(OpKind::all_gather, kMiB)});
  CHECK_THROWS_WITH_AS(tree.check(g),
                       "<test>: error: collectives.algorithm: tree cannot run the all_gather over 16 ranks on 2 node(s): NCCL's tree runs "
                       "all-reduce only (to force it for some kinds only: collectives.algorithm: {all_reduce: tree})",
                       ConfigError);
  const auto nvls_a100 = test::collectives(a100, test::collectives_settings("nvls"));
  CHECK_THROWS_WITH_AS((void)nvls_a100.plan(OpKind::all_reduce, iota(8), kMiB, engine::cluster_view(a100)),
                       "<test>: error: collectives.algorithm: nvls cannot run the all_reduce over 8 ranks on 1 node(s): the topology has "
                       "no NVLink SHARP (node.nvls: false)",
                       ConfigError);
  const auto nvls = test::collectives(h100, test::collectives_settings("nvls"));
  CHECK_THROWS_AS(nvls.check(g), ConfigError);  // NVLS all-gather across nodes needs CollNet
}

TEST_CASE("NCCL's double binary tree: parents as in src/graph/trees.cc's pictures") {
  using engine::collectives::double_tree_parents;
  // 12 ranks: tree 0 is 0 -> 8 -> {4, 10}, 4 -> {2, 6}, ...; tree 1 mirrors it: 11 -> 3 -> {7, 1}.
  const auto t = double_tree_parents(12);
  CHECK(t[0][0] == -1);
  CHECK(t[0][8] == 0);
  CHECK(t[0][4] == 8);
  CHECK(t[0][10] == 8);
  CHECK(t[0][2] == 4);
  CHECK(t[0][6] == 4);
  CHECK(t[0][1] == 2);
  CHECK(t[0][11] == 10);
  CHECK(t[1][11] == -1);
  CHECK(t[1][3] == 11);
  CHECK(t[1][7] == 3);
  CHECK(t[1][1] == 3);
  CHECK(t[1][9] == 7);
  // 13 ranks (odd): tree 1 shifts tree 0 by one: rooted at 1, 1 -> 9 -> {5, 0}.
  const auto odd = double_tree_parents(13);
  CHECK(odd[0][12] == 8);
  CHECK(odd[1][1] == -1);
  CHECK(odd[1][9] == 1);
  CHECK(odd[1][5] == 9);
  CHECK(odd[1][0] == 9);
  // Busiest node: inside one tree (parent + 2 children) and a leaf of the other.
  CHECK(engine::collectives::double_tree_max_degree(1) == 0);
  CHECK(engine::collectives::double_tree_max_degree(2) == 2);
  CHECK(engine::collectives::double_tree_max_degree(3) == 3);
  CHECK(engine::collectives::double_tree_max_degree(12) == 4);
}

TEST_CASE("a group spread unevenly over nodes runs a flat ring whose node crossings carry the whole share") {
  // Ranks 0-11 of 8-GPU nodes: 8 on node 0, 4 on node 1. The tree, NVLS and the hierarchical
  // algorithm need the same number of ranks on each node; the ring's two node crossings
  // (7 -> 8 and 11 -> 0) each carry a rank's whole share, 11/12 S, through one NIC.
  const auto topo = test::topology("h100_sxm_8x_ib400.yaml");
  const auto c = test::collectives(topo);
  const double s = kGiB;
  const auto sel = c.select(OpKind::all_reduce, iota(12), s);
  CHECK(sel.algorithm->name() == "ring");
  const double share = 2 * 11.0 / 12.0 * s;
  const double expected = (8.4 + (22 - 2) * 3.4 + 2 * 14) * kUs + std::max(share / 360e9, share / 47.5e9);
  CHECK(sel.time() == doctest::Approx(expected).epsilon(1e-9).scale(0));
  const auto plan = c.plan(OpKind::all_reduce, iota(12), s, engine::cluster_view(topo));
  REQUIRE(plan.paths.size() == 1);
  int crossings = 0;
  for (const auto& h : plan.paths[0].hops) crossings += h.via == engine::Via::nic ? 1 : 0;
  CHECK(crossings == 2);
  CHECK(plan.paths[0].bytes == doctest::Approx(share).scale(0));
}

TEST_CASE("symmetric mode's plans keep only the hops leaving each path's busiest node") {
  // 4 nodes x 8 GPUs. The intra-node pattern and the rails' ring send 8 hops from every node:
  // node 0 (the lowest) keeps its 8. The double binary tree over 4 nodes (NCCL's, by hand):
  // tree 0 parents {-, 2, 0, 2}, tree 1 (mirrored) {1, 3, 1, -}; edges per node 2, 4, 4, 2;
  // node 1 is the busiest (the lower of 1 and 2): 8 hops per edge, 32 of the tree's 96.
  const auto topo = test::topology("h100_sxm_8x_ib400.yaml");
  const auto c = test::collectives(topo);
  engine::ClusterView folded = engine::cluster_view(topo);
  folded.busiest_node_only = true;
  const auto all = c.plan(OpKind::all_reduce, iota(32), kGiB, engine::cluster_view(topo));
  const auto some = c.plan(OpKind::all_reduce, iota(32), kGiB, folded);
  REQUIRE(all.paths.size() == 3);
  REQUIRE(some.paths.size() == 3);
  CHECK(all.paths[0].hops.size() == 32);
  CHECK(all.paths[2].hops.size() == 96);
  const std::array<std::pair<std::size_t, int>, 3> expected{{{8, 0}, {8, 0}, {32, 1}}};
  for (std::size_t p = 0; p < 3; ++p) {
    CHECK(some.paths[p].hops.size() == expected[p].first);
    CHECK(some.paths[p].bytes == all.paths[p].bytes);
    for (const auto& h : some.paths[p].hops) CHECK(h.src / 8 == expected[p].second);
    // The same hops, in the same order, as the full path's from that node.
    std::vector<std::pair<int, int>> kept;
    for (const auto& h : all.paths[p].hops) {
      if (h.src / 8 == expected[p].second) kept.emplace_back(h.src, h.dst);
    }
    std::vector<std::pair<int, int>> got;
    for (const auto& h : some.paths[p].hops) got.emplace_back(h.src, h.dst);
    CHECK(got == kept);
  }
}

TEST_CASE("the algorithms each group's collectives ran, whose buffers its communicator holds") {
  SUBCASE("8 x H100: FSDP's gathers and reductions on the ring, an all-reduce on NVLS") {
    const auto c = test::collectives(test::topology("h100_sxm_8x_ib400.yaml"));
    const auto g =
        test::collectives_graph(8, 8,
                                {test::collective_op(OpKind::all_gather, 64 * kMiB), test::collective_op(OpKind::reduce_scatter, 64 * kMiB),
                                 test::collective_op(OpKind::all_reduce, 64 * kMiB)});
    REQUIRE(c.select(OpKind::all_reduce, iota(8), 64 * kMiB).algorithm->name() == "nvls");
    const auto used = c.communicators(g);
    REQUIRE(used.size() == 1);
    CHECK(used[0].group == graph::Group::shard);
    CHECK(used[0].ranks_per_node == 8);
    CHECK(used[0].nodes == 1);
    CHECK(used[0].ring);
    CHECK_FALSE(used[0].tree);
    CHECK(used[0].nvls);
  }
  SUBCASE("2 DGX A100: a 4 KiB all-reduce on the tree (NCCL's model, above), a gradient's gather on the ring") {
    const auto c = test::collectives(test::topology("a100_80gb_8x_ib200.yaml"));
    const auto g = test::collectives_graph(16, 16, {test::collective_op(OpKind::all_reduce, 4 * kKiB)});
    auto used = c.communicators(g);
    REQUIRE(used.size() == 1);
    CHECK(used[0].tree);
    CHECK_FALSE(used[0].ring);
    CHECK(used[0].nodes == 2);
    const auto both =
        test::collectives_graph(16, 16, {test::collective_op(OpKind::all_reduce, 4 * kKiB), test::collective_op(OpKind::all_gather, kGiB)});
    used = c.communicators(both);
    REQUIRE(used.size() == 1);
    CHECK(used[0].tree);
    CHECK(used[0].ring);
  }
  SUBCASE("two pipeline stages of 8 ranks each: one on each node") {
    const auto c = test::collectives(test::topology("h100_sxm_8x_ib400.yaml"));
    auto g = test::collectives_graph(16, 8, {test::collective_op(OpKind::all_gather, kMiB)});
    g.info.pp_group = 2;
    g.info.replicate_group = 1;
    const auto used = c.communicators(g);
    REQUIRE(used.size() == 2);
    CHECK(used[1].group == graph::Group::pp);
    CHECK(used[1].nodes == 2);
  }
}
