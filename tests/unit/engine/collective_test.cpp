// Single collectives on an idle DGX H100 / DGX A100 cluster: the time the simulation gives against
// NCCL's model worked by hand, and the bus bandwidth against the measured figures of
// shared/reference/nccl-model.md. Each test case runs one simulation (SimGrid allows one engine
// per process; CTest runs each case on its own); `ctest -R "engine: busbw" -V` prints the figures.
//
// Constants used by hand below (NCCL src/graph/tuning.cc; nccl-model.md):
//   ring:  base 6.6 / 14 / 8.4 us (LL / LL128 / Simple); per step NVLink 0.6 / 1.9 / 3.4 us,
//          network 2.7 / 4 / 14 us; across nodes an NVLink step costs at least the proxy's
//          overhead, 1 us (Intel) or 2 us (AMD), x3 for Simple; bandwidth x0.5 (LL, capped at
//          141 GB/s on Hopper), x0.92 (LL128)
//   tree:  base 6.8 / 14 / 8.4; NVLink 0.6 / 1.25 / 4.0; network 5.0 / 8.5 / 14; bandwidth x0.92
//   NVLS:  25 us (NVLink step, no base); NVLS_TREE adds 2 log2(nodes) x 14 us; NVLink at x0.85
// Topologies: H100 NVLink 450 GB/s x 0.8 = 360 GB/s, NDR 50 GB/s x 0.95 = 47.5 GB/s per NIC;
// A100 NVLink 300 GB/s x 0.77 = 231 GB/s, HDR 25 GB/s x 0.96 = 24 GB/s; InfiniBand adds no
// latency beyond NCCL's constants.
#include <doctest/doctest.h>

#include <cstdio>

#include "collective_support.hpp"

using namespace shardsim;
using graph::OpKind;

namespace {

constexpr double kS = 4 * kGiB;      // the collective's size: nccl-tests' peak bus bandwidths are at GiBs
constexpr double kNvlH100 = 360e9;   // bytes/s
constexpr double kNicH100 = 47.5e9;  // bytes/s
constexpr double kNvlA100 = 231e9;   // bytes/s
constexpr double kNicA100 = 24e9;    // bytes/s
constexpr double kUs = 1e-6;

struct Run {
  double time;
  char algorithm[16];
  char protocol[8];
};

// Simulates one collective of `kind` over all `nodes` x 8 ranks and reports what ran (one
// simulation per process: run a second one in test::in_child, and then the first too).
Run run_one(OpKind kind, const config::TopologyConfig& topo, int nodes, const config::CollectivesConfig& settings) {
  const int n = nodes * topo.node.gpus;
  const auto g = test::collectives_graph(n, n, {test::collective_op(kind, kS)});
  const auto c = test::collectives(topo, settings);
  const auto r = test::simulate(g, topo, nodes, c);
  std::vector<int> ranks(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) ranks[static_cast<std::size_t>(i)] = i;
  const auto s = c.select(kind, ranks, kS);
  Run out{};
  out.time = r.timeline.at(0, 0).end;
  for (int rank = 0; rank < n; ++rank) CHECK(r.timeline.at(0, rank).end == doctest::Approx(out.time).scale(0));
  std::snprintf(out.algorithm, sizeof out.algorithm, "%s", std::string(s.algorithm->name()).c_str());
  std::snprintf(out.protocol, sizeof out.protocol, "%s", std::string(engine::collectives::to_string(s.protocol)).c_str());
  return out;
}

void report(const char* what, OpKind kind, int n, const Run& r, const char* measured) {
  std::printf("busbw %-34s %-12s %-6s %7.1f GB/s  (measured: %s)\n", what, r.algorithm, r.protocol, test::busbw(kind, n, kS, r.time) / 1e9,
              measured);
}

}  // namespace

TEST_CASE("busbw: all-gather on 8 x H100 is the ring's 360 GB/s") {
  const Run r = run_one(OpKind::all_gather, test::topology("h100_sxm_8x_ib400.yaml"), 1, test::collectives_settings());
  CHECK(std::string(r.algorithm) == "ring");
  CHECK(std::string(r.protocol) == "simple");
  // 7 steps over NVLink; each rank sends 7/8 S to its neighbour.
  const double expected = (8.4 + 7 * 3.4) * kUs + 7.0 / 8.0 * kS / kNvlH100;
  CHECK(r.time == doctest::Approx(expected).epsilon(1e-6).scale(0));
  CHECK(test::busbw(OpKind::all_gather, 8, kS, r.time) / 1e9 == doctest::Approx(360).epsilon(0.01).scale(0));
  report("all-gather 8 x H100", OpKind::all_gather, 8, r, "~360-370 GB/s, nccl-tests#212, #326");
}

TEST_CASE("busbw: reduce-scatter on 8 x H100 is the ring's 360 GB/s") {
  const Run r = run_one(OpKind::reduce_scatter, test::topology("h100_sxm_8x_ib400.yaml"), 1, test::collectives_settings());
  CHECK(std::string(r.algorithm) == "ring");
  const double expected = (8.4 + 7 * 3.4) * kUs + 7.0 / 8.0 * kS / kNvlH100;
  CHECK(r.time == doctest::Approx(expected).epsilon(1e-6).scale(0));
  CHECK(test::busbw(OpKind::reduce_scatter, 8, kS, r.time) / 1e9 == doctest::Approx(360).epsilon(0.01).scale(0));
  report("reduce-scatter 8 x H100", OpKind::reduce_scatter, 8, r, "~360-370 GB/s, nccl-tests#212, #326");
}

TEST_CASE("busbw: all-reduce on 8 x H100 without NVLink SHARP is the ring's 360 GB/s") {
  const Run r =
      run_one(OpKind::all_reduce, test::topology("h100_sxm_8x_ib400.yaml", {{"node.nvls", "false"}}), 1, test::collectives_settings());
  CHECK(std::string(r.algorithm) == "ring");
  // Ring: 14 steps, 2 x 7/8 S per rank. (The tree would take 8.4 + 2 x 7 x 4.0 us and
  // 2 x 7/8 S at 0.92 of NVLink: slower.)
  const double expected = (8.4 + 14 * 3.4) * kUs + 2 * 7.0 / 8.0 * kS / kNvlH100;
  CHECK(r.time == doctest::Approx(expected).epsilon(1e-6).scale(0));
  CHECK(test::busbw(OpKind::all_reduce, 8, kS, r.time) / 1e9 == doctest::Approx(360).epsilon(0.01).scale(0));
  report("all-reduce 8 x H100, no NVLS", OpKind::all_reduce, 8, r, "~360-370 GB/s (ring), nccl-tests#212");
}

TEST_CASE("busbw: all-reduce on 8 x H100 with NVLink SHARP reaches ~480 GB/s") {
  const Run r = run_one(OpKind::all_reduce, test::topology("h100_sxm_8x_ib400.yaml"), 1, test::collectives_settings());
  CHECK(std::string(r.algorithm) == "nvls");
  // Each GPU port moves (n+1)/n S each way, NVLink at 0.85 of the ring's rate; 25 us.
  const double expected = 25 * kUs + 9.0 / 8.0 * kS / (0.85 * kNvlH100);
  CHECK(r.time == doctest::Approx(expected).epsilon(1e-6).scale(0));
  const double busbw = test::busbw(OpKind::all_reduce, 8, kS, r.time) / 1e9;
  CHECK(busbw == doctest::Approx(478).epsilon(0.02).scale(0));  // ~480, 476 observed
  report("all-reduce 8 x H100, NVLS", OpKind::all_reduce, 8, r, "~480, 476 observed, nccl-tests#212, #290");
}

TEST_CASE("busbw: all-gather on 8 x H100 forced to NVLS moves S per port and is slower than the ring") {
  const Run r = run_one(OpKind::all_gather, test::topology("h100_sxm_8x_ib400.yaml"), 1, test::collectives_settings("nvls"));
  const double expected = 25 * kUs + kS / (0.85 * kNvlH100);
  CHECK(r.time == doctest::Approx(expected).epsilon(1e-6).scale(0));
  CHECK(r.time > (8.4 + 7 * 3.4) * kUs + 7.0 / 8.0 * kS / kNvlH100);
  report("all-gather 8 x H100, NVLS forced", OpKind::all_gather, 8, r, "-");
}

TEST_CASE("busbw: all-gather on 2 x 8 H100 is bounded by the NICs, 8 x 47.5 GB/s") {
  const Run r = run_one(OpKind::all_gather, test::topology("h100_sxm_8x_ib400.yaml"), 2, test::collectives_settings());
  CHECK(std::string(r.algorithm) == "ring");
  // 15 steps, one across nodes. Each rank sends 15/16 S: 1/8 of it over its NIC, the rest over
  // NVLink; the NIC share is the slower.
  const double nic = 15.0 / 16.0 * kS / 8 / kNicH100;
  const double nvlink = 15.0 / 16.0 * kS * 7.0 / 8.0 / kNvlH100;
  CHECK(nic > nvlink);
  const double expected = (8.4 + 14 * 3.4 + 14) * kUs + nic;
  CHECK(r.time == doctest::Approx(expected).epsilon(1e-6).scale(0));
  const double busbw = test::busbw(OpKind::all_gather, 16, kS, r.time) / 1e9;
  CHECK(busbw == doctest::Approx(8 * 47.5).epsilon(0.01).scale(0));
  CHECK(busbw >= 8 * 46 * 0.99);  // NDR measured 46-49 GB/s per NIC
  CHECK(busbw <= 8 * 49);
  report("all-gather 2 x 8 H100", OpKind::all_gather, 16, r, "8 NICs x 46-49 GB/s, nccl-tests#290, #267");
}

TEST_CASE("busbw: reduce-scatter on 2 x 8 H100 is bounded by the NICs, 8 x 47.5 GB/s") {
  const Run r = run_one(OpKind::reduce_scatter, test::topology("h100_sxm_8x_ib400.yaml"), 2, test::collectives_settings());
  const double expected = (8.4 + 14 * 3.4 + 14) * kUs + 15.0 / 16.0 * kS / 8 / kNicH100;
  CHECK(r.time == doctest::Approx(expected).epsilon(1e-6).scale(0));
  report("reduce-scatter 2 x 8 H100", OpKind::reduce_scatter, 16, r, "8 NICs x 46-49 GB/s, nccl-tests#290, #267");
}

TEST_CASE("busbw: all-reduce on 2 x 8 H100 runs NVLS_TREE past the NICs' ring bound") {
  const Run r = run_one(OpKind::all_reduce, test::topology("h100_sxm_8x_ib400.yaml"), 2, test::collectives_settings());
  CHECK(std::string(r.algorithm) == "nvls");
  // NVLS in each node ((n+1)/n S per port at 0.85 x 360 GB/s); across nodes each GPU's 1/8 slice
  // goes both ways along the two trees' one edge: S/8 per NIC each way at 47.5 GB/s. NVLink is
  // the slower. Latency: 25 us + 2 x log2(2) x 14 us.
  const double nvlink = 9.0 / 8.0 * kS / (0.85 * kNvlH100);
  const double nic = kS / 8 / kNicH100;
  CHECK(nvlink > nic);
  const double expected = (25 + 2 * 14) * kUs + nvlink;
  CHECK(r.time == doctest::Approx(expected).epsilon(1e-6).scale(0));
  const double busbw = test::busbw(OpKind::all_reduce, 16, kS, r.time) / 1e9;
  CHECK(busbw > 8 * 47.5);  // the ring's NIC bound
  report("all-reduce 2 x 8 H100", OpKind::all_reduce, 16, r, "above the NICs with NVLSTree, nccl-tests#196");
}

TEST_CASE("busbw: all-reduce on 2 DGX A100 runs the tree past the NIC-bound ring (nccl-tests#196)") {
  const auto topo = test::topology("a100_80gb_8x_ib200.yaml");
  const Run tree = test::in_child([&] { return run_one(OpKind::all_reduce, topo, 2, test::collectives_settings()); });
  const Run ring = test::in_child([&] { return run_one(OpKind::all_reduce, topo, 2, test::collectives_settings("ring")); });
  CHECK(std::string(tree.algorithm) == "tree");
  CHECK(std::string(tree.protocol) == "simple");
  // Ring: each NIC sends 1/8 of 2 x 15/16 S: bus bandwidth 8 x 24 = 192 GB/s, as NVIDIA measures
  // on DGX A100 (NVIDIA/nccl#812). 30 steps, 2 across nodes; the 28 within nodes cost the AMD
  // proxy overhead, 3 x 2 us, more than NVLink's 3.4 us.
  const double ring_expected = (8.4 + 28 * 6.0 + 2 * 14) * kUs + 2 * 15.0 / 16.0 * kS / 8 / kNicA100;
  CHECK(ring.time == doctest::Approx(ring_expected).epsilon(1e-6).scale(0));
  CHECK(test::busbw(OpKind::all_reduce, 16, kS, ring.time) / 1e9 == doctest::Approx(192).epsilon(0.015).scale(0));
  // Tree: the chain in each node moves 2 x 7/8 S per port, each NIC S/8 each way (two trees, one
  // edge, S/2 each over 8 rails), all at 0.92; NVLink is the slower. 8.4 + 2 x (7 x 4.0 + 14) us.
  const double nvlink = 2 * 7.0 / 8.0 * kS / (0.92 * kNvlA100);
  const double nic = kS / 8 / (0.92 * kNicA100);
  CHECK(nvlink > nic);
  const double tree_expected = (8.4 + 2 * (7 * 4.0 + 14)) * kUs + nvlink;
  CHECK(tree.time == doctest::Approx(tree_expected).epsilon(1e-6).scale(0));
  CHECK(test::busbw(OpKind::all_reduce, 16, kS, tree.time) > test::busbw(OpKind::all_reduce, 16, kS, ring.time) * 1.15);
  report("all-reduce 2 x 8 A100, ring forced", OpKind::all_reduce, 16, ring, "192 GB/s, NVIDIA/nccl#812");
  report("all-reduce 2 x 8 A100", OpKind::all_reduce, 16, tree, "above the NIC bound, nccl-tests#196");
}

TEST_CASE("busbw: all-reduce on 8 x A100 is the ring's ~231 GB/s") {
  const Run r = run_one(OpKind::all_reduce, test::topology("a100_80gb_8x_ib200.yaml"), 1, test::collectives_settings());
  CHECK(std::string(r.algorithm) == "ring");
  const double expected = (8.4 + 14 * 3.4) * kUs + 2 * 7.0 / 8.0 * kS / kNvlA100;
  CHECK(r.time == doctest::Approx(expected).epsilon(1e-6).scale(0));
  CHECK(test::busbw(OpKind::all_reduce, 8, kS, r.time) / 1e9 == doctest::Approx(230).epsilon(0.01).scale(0));
  report("all-reduce 8 x A100", OpKind::all_reduce, 8, r, "~230, 232.5 GB/s, nccl-tests#149, #175");
}

TEST_CASE("two collectives at once share NVLink: each takes twice as long") {
  const auto topo = test::topology("h100_sxm_8x_ib400.yaml");
  const auto g =
      test::collectives_graph(8, 8, {test::collective_op(OpKind::all_gather, kS), test::collective_op(OpKind::reduce_scatter, kS)});
  const auto c = test::collectives(topo);
  const auto r = test::simulate(g, topo, 1, c);
  // Both rings cross every GPU's NVLink ports: 2 x 7/8 S through 360 GB/s.
  const double shared = (8.4 + 7 * 3.4) * kUs + 2 * 7.0 / 8.0 * kS / kNvlH100;
  CHECK(r.timeline.at(0, 0).end == doctest::Approx(shared).epsilon(1e-6).scale(0));
  CHECK(r.timeline.at(1, 0).end == doctest::Approx(shared).epsilon(1e-6).scale(0));
}
