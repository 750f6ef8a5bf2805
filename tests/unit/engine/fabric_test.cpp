// Fabrics beyond one NIC per GPU on a non-blocking network: GPUs sharing NICs, an oversubscribed
// fat tree, and collectives of different groups contending for the same NIC. Expected times by
// hand from the topology's figures and NCCL's ring constants (8.4 us base; per step 3.4 us over
// NVLink, 14 us over the network, Simple).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "collective_support.hpp"

using namespace shardsim;
using graph::OpKind;

namespace {

constexpr double kS = 4 * kGiB;
constexpr double kUs = 1e-6;

double one_collective(OpKind kind, const config::TopologyConfig& topo, int nodes, engine::FlowGranularity flows,
                      const config::CollectivesConfig& settings = test::collectives_settings(),
                      config::SimulationMode mode = config::SimulationMode::full) {
  const int n = nodes * topo.node.gpus;
  const auto g = test::collectives_graph(n, n, {test::collective_op(kind, kS)});
  const auto c = test::collectives(topo, settings);
  return test::simulate(g, topo, nodes, c, flows, mode).timeline.at(0, 0).end;
}

}  // namespace

TEST_CASE("busbw: two 400 GbE NICs for 8 GPUs bound an all-gather across two nodes at 2 NICs' rate") {
  const auto topo = test::topology("h100_sxm_8x_roce_2x400gbe.yaml");
  const double t = one_collective(OpKind::all_gather, topo, 2, engine::FlowGranularity::path);
  // Each rank sends 15/16 S, 1/8 of it over its NIC; four ranks share each NIC of 400 Gb/s x
  // 0.92 = 46 GB/s: 4 x 15/16 S / 8 through 46 GB/s.
  const double expected = (8.4 + 14 * 3.4 + 14) * kUs + 4 * 15.0 / 16.0 * kS / 8 / 46e9;
  CHECK(t == doctest::Approx(expected).epsilon(1e-6).scale(0));
  const double busbw = test::busbw(OpKind::all_gather, 16, kS, t);
  CHECK(busbw / 1e9 == doctest::Approx(2 * 46).epsilon(0.01).scale(0));
  std::printf("busbw all-gather 2 x 8 H100, 2 NICs per node: %.1f GB/s (2 x 46 GB/s)\n", busbw / 1e9);
}

TEST_CASE("busbw: a 2:1 oversubscribed fat tree bounds an all-gather across two nodes by its uplinks") {
  const auto topo = test::topology("h100_sxm_8x_ib400_fat_tree_2to1.yaml");
  const double t = one_collective(OpKind::all_gather, topo, 2, engine::FlowGranularity::path);
  // A node's 8 ranks each send 15/16 S / 8 to the other node: 15/16 S through its uplink of
  // 8 x 47.5 GB/s / 2 = 190 GB/s (the NICs alone would allow 380).
  const double expected = (8.4 + 14 * 3.4 + 14) * kUs + 15.0 / 16.0 * kS / 190e9;
  CHECK(t == doctest::Approx(expected).epsilon(1e-6).scale(0));
  const double busbw = test::busbw(OpKind::all_gather, 16, kS, t);
  CHECK(busbw / 1e9 == doctest::Approx(190).epsilon(0.01).scale(0));
  std::printf("busbw all-gather 2 x 8 H100, 2:1 fat tree: %.1f GB/s (uplink 190 GB/s)\n", busbw / 1e9);
}

TEST_CASE("path and edge flows agree where GPUs share NICs and behind oversubscribed uplinks") {
  using engine::FlowGranularity;
  struct Case {
    const char* topology;
    OpKind kind;
  };
  for (const Case& c :
       {Case{"h100_sxm_8x_roce_2x400gbe.yaml", OpKind::all_gather}, Case{"h100_sxm_8x_roce_2x400gbe.yaml", OpKind::all_reduce},
        Case{"h100_sxm_8x_ib400_fat_tree_2to1.yaml", OpKind::all_reduce}, Case{"a100_80gb_8x_ib200.yaml", OpKind::all_reduce}}) {
    const std::string topology = c.topology;
    CAPTURE(topology);
    const auto topo = test::topology(c.topology);
    const double path = test::in_child([&] { return one_collective(c.kind, topo, 3, FlowGranularity::path); });
    const double edge = test::in_child([&] { return one_collective(c.kind, topo, 3, FlowGranularity::edge); });
    CHECK(path == doctest::Approx(edge).epsilon(1e-6).scale(0));
  }
}

TEST_CASE("symmetric mode counts shared NICs, uplinks and the trees' busiest nodes as full mode does") {
  using config::SimulationMode;
  using engine::FlowGranularity;
  struct Case {
    const char* topology;
    OpKind kind;
    const char* algorithm;
    int nodes;
  };
  // The tree over 4 nodes: nodes 1 and 2 are inside one tree and a leaf of the other (4 tree
  // edges each), node 0 is the first tree's root and a leaf (2): the busiest nodes set the pace.
  for (const Case& c :
       {Case{"h100_sxm_8x_roce_2x400gbe.yaml", OpKind::all_gather, "auto", 3},
        Case{"h100_sxm_8x_ib400_fat_tree_2to1.yaml", OpKind::reduce_scatter, "auto", 3},
        Case{"aws_p4d_24xlarge_efa.yaml", OpKind::all_reduce, "ring", 2}, Case{"a100_80gb_8x_ib200.yaml", OpKind::all_reduce, "tree", 4}}) {
    const std::string topology = c.topology;
    CAPTURE(topology);
    const auto topo = test::topology(c.topology);
    const auto settings = test::collectives_settings(c.algorithm);
    const double full = test::in_child([&] { return one_collective(c.kind, topo, c.nodes, FlowGranularity::path, settings); });
    const double sym =
        test::in_child([&] { return one_collective(c.kind, topo, c.nodes, FlowGranularity::path, settings, SimulationMode::symmetric); });
    CHECK(sym == doctest::Approx(full).epsilon(1e-6).scale(0));
  }
}

TEST_CASE("contention: replicate-group all-reduces of 4 GPUs sharing a NIC each get a quarter of it") {
  // Hybrid sharding on 2 nodes x 8 GPUs with 2 NICs per node: 8 replicate groups {r, r + 8} run
  // their all-reduce at once; GPUs 0-3 share NIC 0, 4-7 NIC 1. Each group alone sends S over
  // its NIC each way (ring of 2); four of them share 46 GB/s.
  const auto topo = test::topology("h100_sxm_8x_roce_2x400gbe.yaml");
  const auto g = test::collectives_graph(16, 8, {test::collective_op(OpKind::all_reduce, kS, graph::Group::replicate)});
  const auto c = test::collectives(topo, test::collectives_settings("ring"));
  const auto r = test::simulate(g, topo, 2, c);
  // 2 steps, both across nodes; with one rank per node NCCL uses the tree's network step (14 us).
  const double expected = (8.4 + 2 * 14) * kUs + 4 * kS / 46e9;
  for (int rank = 0; rank < 16; ++rank) CHECK(r.timeline.at(0, rank).end == doctest::Approx(expected).epsilon(1e-6).scale(0));
}

TEST_CASE("an NVLink mesh: a pair of GPUs gets its pair link, a whole node every pair") {
  // topologies/h200_sxm_4x_ib400.yaml: 4 GPUs wired to each other, 450 GB/s x 0.8 = 360 GB/s a
  // GPU, 120 GB/s a pair. All four: each rank sends 3/4 S over its three pair links, as through a
  // switch port of 360 GB/s. Two (shard groups {0, 1} and {2, 3}): S / 2 over one pair link at
  // 120 GB/s against a 360 GB/s port, the latency alike: the mesh takes S / 2 x (1/120 - 1/360)
  // per GB/s longer.
  const auto mesh = test::topology("h200_sxm_4x_ib400.yaml");
  const auto switched = test::topology("h200_sxm_4x_ib400.yaml", {{"node.nvlink_mesh", "false"}});
  const auto ring = test::collectives_settings("ring", "simple");
  const auto time = [&](const config::TopologyConfig& topo, int shard_group) {
    return test::in_child([&] {
      const auto g = test::collectives_graph(4, shard_group, {test::collective_op(OpKind::all_gather, kS)});
      return test::simulate(g, topo, 1, test::collectives(topo, ring)).timeline.at(0, 0).end;
    });
  };
  CHECK(time(mesh, 4) == doctest::Approx(time(switched, 4)).epsilon(1e-9).scale(0));
  CHECK(time(mesh, 2) - time(switched, 2) == doctest::Approx(kS / 2 * (1 / 120e9 - 1 / 360e9)).epsilon(1e-6).scale(0));
}

TEST_CASE("an NVLink mesh refuses NVLink SHARP") {
  CHECK_THROWS_AS((void)test::topology("h200_sxm_4x_ib400.yaml", {{"node.nvls", "true"}}), ConfigError);
}

TEST_CASE("an MI300X node: RCCL's rings over the Infinity Fabric mesh, 48 GB/s a link") {
  // topologies/mi300x_8x_ib400.yaml: 7 xGMI links of 64 GB/s a direction per GPU at 0.75 (48
  // GB/s usable, AMD's figure). All eight GPUs: each sends 7/8 S over its seven links, 336 GB/s;
  // a pair: S / 2 over one link, 48 GB/s. Ring / Simple latency: base 8.4 us plus 3.4 us a step
  // (NCCL's Hopper constants, cdna3 has no RCCL ones).
  const auto mi300x = test::topology("mi300x_8x_ib400.yaml");
  CHECK(mi300x.gpu.arch == config::GpuArch::cdna3);
  const auto ring = test::collectives_settings("ring", "simple");
  const auto time = [&](int shard_group) {
    return test::in_child([&] {
      const auto g = test::collectives_graph(8, shard_group, {test::collective_op(OpKind::all_gather, kS)});
      return test::simulate(g, mi300x, 1, test::collectives(mi300x, ring)).timeline.at(0, 0).end;
    });
  };
  CHECK(time(8) == doctest::Approx((8.4 + 7 * 3.4) * kUs + 7.0 / 8 * kS / 336e9).epsilon(1e-6).scale(0));
  CHECK(time(2) == doctest::Approx((8.4 + 3.4) * kUs + kS / 2 / 48e9).epsilon(1e-6).scale(0));
}

namespace {

// ECMP on a non-blocking fat tree: nodes of 1 GPU and 1 NIC (400 Gb/s x 0.95 = 47.5 GB/s), each
// its own leaf, with an uplink to each of 2 spines carrying half a NIC (23.75 GB/s). NCCL's 2
// channels on the NIC, times `qps` queue pairs, make the flows of each hop that the switch hashes.
config::TopologyConfig ecmp_topology(int qps, std::uint64_t seed) {
  return test::topology("h100_sxm_8x_ib400.yaml", {{"node.gpus", "1"},
                                                   {"node.nvls", "false"},
                                                   {"node.nccl_channels", "2"},
                                                   {"fabric.kind", "fat_tree"},
                                                   {"fabric.routing", "ecmp"},
                                                   {"fabric.spines", "2"},
                                                   {"fabric.qps_per_connection", std::to_string(qps)},
                                                   {"fabric.ecmp_seed", std::to_string(seed)}});
}

// A ring all-gather over 2 nodes (one hop each way) on the ECMP fabric, in units of the time its
// data takes through the NICs alone (S / 2 at 47.5 GB/s), latency taken off.
double ecmp_slowdown(int qps, std::uint64_t seed) {
  const auto topo = ecmp_topology(qps, seed);
  const auto ring = test::collectives_settings("ring", "simple");
  const double t = test::in_child([&] {
    const auto g = test::collectives_graph(2, 2, {test::collective_op(OpKind::all_gather, kS)});
    return test::simulate(g, topo, 2, test::collectives(topo, ring)).timeline.at(0, 0).end;
  });
  const double latency = (8.4 + 14) * kUs;  // one step over the network
  return (t - latency) / (kS / 2 / 47.5e9);
}

// Balls into bins by hand: the expected slowdown when each of 2 hops puts `lanes` flows on 2
// spines at random. A hop whose busier spine holds m of them runs at 2m / lanes of the even
// spread; the ring at its slower hop's pace.
double expected_ecmp_slowdown(int lanes) {
  std::vector<double> p_m(static_cast<std::size_t>(lanes) + 1, 0.0);  // P(busier spine holds m)
  for (int x = 0; x <= lanes; ++x) {
    double choose = 1;
    for (int i = 0; i < x; ++i) choose = choose * (lanes - i) / (i + 1);
    p_m[static_cast<std::size_t>(std::max(x, lanes - x))] += choose / std::pow(2.0, lanes);
  }
  double e = 0;
  for (int a = 0; a <= lanes; ++a) {
    for (int b = 0; b <= lanes; ++b)
      e += p_m[static_cast<std::size_t>(a)] * p_m[static_cast<std::size_t>(b)] * 2.0 * std::max(a, b) / lanes;
  }
  return e;
}

}  // namespace

TEST_CASE("ECMP: two flows a hop on two spines collide at random, and the ring waits for the collision") {
  // 2 lanes a hop (2 channels, 1 queue pair each). A hop whose lanes hash to different spines
  // runs at the NIC's rate; one whose lanes share a spine gets half of it, and so does the whole
  // ring: each seed gives exactly 1 or 2. Both hops spread: probability 1/4; mean 1/4 + 3/4 x 2.
  constexpr int kSeeds = 128;
  int spread = 0;
  double sum = 0;
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    const double s = ecmp_slowdown(1, seed);
    CAPTURE(seed);
    const bool one = std::abs(s - 1) < 1e-6;
    CHECK((one || std::abs(s - 2) < 1e-6));
    spread += one ? 1 : 0;
    sum += s;
  }
  // Binomial(128, 1/4): 32 expected, standard deviation 4.9; the hash must not be far off.
  CHECK(spread >= 17);
  CHECK(spread <= 47);
  CHECK(expected_ecmp_slowdown(2) == doctest::Approx(1.75).scale(0));
  std::printf("ECMP, 2 flows a hop on 2 spines: ring %.3f x its NIC time over %d seeds (1.75 expected)\n", sum / kSeeds, kSeeds);
  std::fflush(stdout);  // before another test's children inherit the buffer
}

TEST_CASE("ECMP: more queue pairs a connection spread the flows, as Meta's QP scaling did") {
  // NCCL_IB_QPS_PER_CONNECTION 8: 16 lanes a hop; the busier spine holds 8 + |X - 8| of them, X
  // binomial(16, 1/2). Gangidi et al. (SIGCOMM 2024, Meta's RoCE fabric) found QP scaling with
  // enhanced ECMP up to 40 % faster on AllReduce than ECMP with one queue pair.
  constexpr int kSeeds = 96;
  double sum1 = 0;
  double sum8 = 0;
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    sum1 += ecmp_slowdown(1, seed);
    sum8 += ecmp_slowdown(8, seed);
  }
  const double one = sum1 / kSeeds;
  const double eight = sum8 / kSeeds;
  const double expected8 = expected_ecmp_slowdown(16);
  // Sample means within 3 standard errors of the balls-into-bins expectations (per-seed standard
  // deviations 0.43 and 0.15).
  CHECK(one == doctest::Approx(1.75).epsilon(3 * 0.43 / std::sqrt(kSeeds) / 1.75).scale(0));
  CHECK(eight == doctest::Approx(expected8).epsilon(3 * 0.15 / std::sqrt(kSeeds) / expected8).scale(0));
  CHECK(eight < one);
  std::printf("ECMP, 1 vs 8 queue pairs: %.3f vs %.3f x the NIC time (expected 1.75 vs %.3f): %.0f %% faster\n", one, eight, expected8,
              100 * (one / eight - 1));
  std::fflush(stdout);
}

TEST_CASE("ECMP with one flow a hop per spine and adaptive routing differ only by collisions") {
  // One spine: every flow on the same uplink, which carries what the NIC does: no collision
  // can cost more than the even spread.
  const auto topo = test::topology(
      "h100_sxm_8x_ib400.yaml",
      {{"node.gpus", "1"}, {"node.nvls", "false"}, {"fabric.kind", "fat_tree"}, {"fabric.routing", "ecmp"}, {"fabric.spines", "1"}});
  const auto adaptive = test::topology("h100_sxm_8x_ib400.yaml", {{"node.gpus", "1"}, {"node.nvls", "false"}, {"fabric.kind", "fat_tree"}});
  const double a = test::in_child([&] { return one_collective(OpKind::all_gather, topo, 4, engine::FlowGranularity::path); });
  const double b = test::in_child([&] { return one_collective(OpKind::all_gather, adaptive, 4, engine::FlowGranularity::path); });
  CHECK(a == doctest::Approx(b).epsilon(1e-9).scale(0));
}
