// RCCL's tuner on MI300X (topologies/mi300x_8x_ib400.yaml, gpu.arch cdna3): the pair it runs is
// the one RCCL's own model rates fastest, worked here by hand from ROCm/rccl src/graph/tuning.cc
// (0cbce2a, 2024-10-24) tuning_model_5, the MI300X platform's; the pair is then timed with
// NCCL's constants as on any other GPU.
//
// RCCL constants, restated (us; LL / Simple; no LL128 on MI300):
//   base latency      ring and tree 12 / 17
//   xGMI step         ring 0.8 / 2.1         tree 0.9 / 2.3
//   network step      ring 9.5 / 320         tree 10.5 / 25
//   across nodes a ring's xGMI step costs at least the proxy's 1 us (Intel host CPUs), x3 Simple
//   bandwidth ratio   ring 0.08 / 1.0        tree 0.06 / 0.11 (<= 2 nodes), 0.06 / 0.59 (more)
//   size corrections by log2(S / 64): tree LL 1.0 at 6-10, 12, 14, 15, 0.6 at 11, 0.9 at 13,
//   else 0.1; tree Simple 0.1 to 14, 0.7 at 15, 1.0 at 16-25, 0.8 from 26; ring (across nodes
//   only) LL 1.0 at 11 and 13, 0.2 at 12, 17, 18, 0.4 at 14, 15, else 0.1; Simple 0.1 to 22,
//   0.8 at 23, 1.0 from 24.
// The links: xGMI 448 GB/s x 0.75 a GPU (its 7 peer links together), one 400 Gb/s NIC a GPU
// at 0.95; no network latency in the topology.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "collective_support.hpp"
#include "core/error.hpp"

using namespace shardsim;
using engine::collectives::Protocol;
using graph::OpKind;

namespace {

constexpr double kUs = 1e-6;
constexpr double kXgmi = 448e9 * 0.75;
constexpr double kNic = 50e9 * 0.95;

using test::iota;

struct Rated {
  std::string algorithm;
  std::string protocol;
  double estimate;  // RCCL's, seconds
};

const Rated& fastest(const std::vector<Rated>& r) {
  return *std::min_element(r.begin(), r.end(), [](const Rated& a, const Rated& b) { return a.estimate < b.estimate; });
}

// The candidate the tuner weighed for this pair.
const engine::collectives::Selection* candidate(const std::vector<engine::collectives::Selection>& all, const std::string& algorithm,
                                                Protocol p) {
  for (const auto& s : all) {
    if (std::string(s.algorithm->name()) == algorithm && s.protocol == p) return &s;
  }
  return nullptr;
}

void check_against(const engine::collectives::Collectives& c, OpKind kind, int n, double bytes, const std::vector<Rated>& by_hand) {
  CAPTURE(bytes);
  const auto all = c.candidates(kind, iota(n), bytes);
  CHECK(all.size() == by_hand.size());
  for (const Rated& r : by_hand) {
    CAPTURE(r.algorithm);
    CAPTURE(r.protocol);
    const auto* s = candidate(all, r.algorithm, r.protocol == "ll" ? Protocol::ll : Protocol::simple);
    REQUIRE(s != nullptr);
    CHECK(s->tuner == doctest::Approx(r.estimate).epsilon(1e-9).scale(0));
  }
  const auto chosen = c.select(kind, iota(n), bytes);
  CHECK(std::string(chosen.algorithm->name()) == fastest(by_hand).algorithm);
  CHECK(std::string(engine::collectives::to_string(chosen.protocol)) == fastest(by_hand).protocol);
}

}  // namespace

TEST_CASE("8 x MI300X all-gather: RCCL runs LL to a few hundred KB and Simple above, never LL128") {
  const auto c = test::collectives(test::topology("mi300x_8x_ib400.yaml"));
  auto by_hand = [](double s) {
    const double sent = 7.0 / 8.0 * s / kXgmi;  // per rank at the links' rate
    return std::vector<Rated>{
        {"ring", "ll", (12 + 7 * 0.8) * kUs + sent / 0.08},
        {"ring", "simple", (17 + 7 * 2.1) * kUs + sent / 1.0},
    };
  };
  for (double s : {4 * kKiB, 64 * kKiB, 256 * kKiB, 1 * kMiB, 8 * kMiB, 64 * kMiB, kGiB})
    check_against(c, OpKind::all_gather, 8, s, by_hand(s));
  // The crossover: 17.6 + x / 0.08 = 31.7 + x for x = 7/8 S / 336 GB/s, S = 471 KB.
  const double crossover = (31.7 - 17.6) * kUs / (1 / 0.08 - 1) * kXgmi * 8.0 / 7.0;
  CHECK(crossover == doctest::Approx(471e3).epsilon(0.01).scale(0));
  CHECK(c.select(OpKind::all_gather, iota(8), 0.95 * crossover).protocol == Protocol::ll);
  CHECK(c.select(OpKind::all_gather, iota(8), 1.05 * crossover).protocol == Protocol::simple);

  // At 1 MiB NCCL's own model, which times the pair, would have LL (10.8 us + 0.92 MB / 141
  // GB/s = 17.3 us) ahead of Simple (32.2 us + 0.92 MB / 336 GB/s = 34.9 us); RCCL runs Simple,
  // and the step pays Simple's time.
  const auto chosen = c.select(OpKind::all_gather, iota(8), kMiB);
  CHECK(chosen.protocol == Protocol::simple);
  CHECK(chosen.time() == doctest::Approx((8.4 + 7 * 3.4) * kUs + 7.0 / 8.0 * kMiB / kXgmi).epsilon(1e-9).scale(0));
  const auto all = c.candidates(OpKind::all_gather, iota(8), kMiB);
  const auto* ll = candidate(all, "ring", Protocol::ll);
  REQUIRE(ll != nullptr);
  CHECK(ll->time() == doctest::Approx((6.6 + 7 * 0.6) * kUs + 7.0 / 8.0 * kMiB / 141e9).epsilon(1e-9).scale(0));
  CHECK(ll->time() < chosen.time());
}

TEST_CASE("8 x MI300X all-reduce: RCCL's ring at every size, its tree without Simple in a node and rated below the ring with LL") {
  const auto c = test::collectives(test::topology("mi300x_8x_ib400.yaml"));
  auto by_hand = [](double s) {
    const double ring = 2 * 7.0 / 8.0 * s / kXgmi;
    const double tree = 2 * 7.0 / 8.0 * s / kXgmi;  // a chain through the node: 2 x 7/8 S a port
    const int log_size = static_cast<int>(std::floor(std::log2(s / 64)));
    const double tree_ll = (log_size >= 6 && log_size <= 15) ? (log_size == 11 ? 0.6 : log_size == 13 ? 0.9 : 1.0) : 0.1;
    return std::vector<Rated>{
        {"tree", "ll", (12 + 2 * 7 * 0.9) * kUs + tree / (0.06 * tree_ll)},
        {"ring", "ll", (12 + 14 * 0.8) * kUs + ring / 0.08},
        {"ring", "simple", (17 + 14 * 2.1) * kUs + ring},
    };
  };
  // The tree's LL pays 24.6 us of latency against the ring's 23.2 and is rated at 0.06 of the
  // links against 0.08: behind at every size (at 8 KiB 25.3 against 23.7 us).
  for (double s : {1 * kKiB, 8 * kKiB, 64 * kKiB, 1 * kMiB, 64 * kMiB}) {
    check_against(c, OpKind::all_reduce, 8, s, by_hand(s));
    CHECK(c.select(OpKind::all_reduce, iota(8), s).algorithm->name() == "ring");
  }
}

TEST_CASE("4 MI300X nodes all-reduce: RCCL's tree with Simple from a few MB, where its ring is rated at a tenth") {
  const auto c = test::collectives(test::topology("mi300x_8x_ib400.yaml"));
  const double bus = 2.0 * 31 / 32;
  auto by_hand = [&](double s) {
    // Ring: each rank sends 2 x 31/32 S, 7/8 of it over xGMI, 1/8 over its NIC; 62 steps, 8 of
    // them across nodes (RCCL counts 2 x nodes), the others at least the proxy's 1 us (x3 Simple).
    const double ring = std::max(bus * s * 7 / 8 / kXgmi, bus * s / 8 / kNic);
    // Tree: a chain through each node (2 x 7/8 S a port) and two trees across the 4 nodes, S/2
    // each edge each way, over the 8 rails; the busiest node is on 4 edges of the two trees:
    // NCCL's trees.cc over 4 nodes has tree 0 as 0 -> 2 -> {1, 3} and tree 1 its mirror,
    // 3 -> 1 -> {2, 0}, so node 2 has a parent and two children in one and a parent in the other;
    // 2 x (7 xGMI steps + log2(4) network steps).
    const double tree = std::max(2 * 7.0 / 8.0 * s / kXgmi, 4 * s / 2 / 8 / kNic);
    const int log_size = static_cast<int>(std::floor(std::log2(s / 64)));
    const double tree_ll = (log_size >= 6 && log_size <= 15) ? (log_size == 11 ? 0.6 : log_size == 13 ? 0.9 : 1.0) : 0.1;
    const double tree_simple = log_size <= 14 ? 0.1 : log_size == 15 ? 0.7 : log_size <= 25 ? 1.0 : 0.8;
    const double ring_ll = log_size == 11 || log_size == 13                     ? 1.0
                           : log_size == 14 || log_size == 15                   ? 0.4
                           : log_size == 12 || log_size == 17 || log_size == 18 ? 0.2
                                                                                : 0.1;
    const double ring_simple = log_size <= 22 ? 0.1 : log_size == 23 ? 0.8 : 1.0;
    return std::vector<Rated>{
        {"tree", "ll", (12 + 2 * (7 * 0.9 + 2 * 10.5)) * kUs + tree / (0.06 * tree_ll)},
        {"tree", "simple", (17 + 2 * (7 * 2.3 + 2 * 25)) * kUs + tree / (0.59 * tree_simple)},
        {"ring", "ll", (12 + 54 * 1.0 + 8 * 9.5) * kUs + ring / (0.08 * ring_ll)},
        {"ring", "simple", (17 + 54 * 3.0 + 8 * 320) * kUs + ring / (1.0 * ring_simple)},
    };
  };
  for (double s : {4 * kKiB, 128 * kKiB, 1 * kMiB, 8 * kMiB, 64 * kMiB, 256 * kMiB, kGiB, 4 * kGiB}) {
    check_against(c, OpKind::all_reduce, 32, s, by_hand(s));
  }
  CHECK(fastest(by_hand(64 * kMiB)).algorithm == "tree");
  CHECK(fastest(by_hand(64 * kMiB)).protocol == "simple");
  CHECK(fastest(by_hand(4 * kGiB)).algorithm == "ring");
}

TEST_CASE("RCCL runs LL128 when the scenario forces it, and refuses the tree with Simple within a node") {
  const auto topo = test::topology("mi300x_8x_ib400.yaml");
  const auto ll128 = test::collectives(topo, test::collectives_settings("ring", "ll128"));
  CHECK(ll128.select(OpKind::all_gather, iota(8), kMiB).protocol == Protocol::ll128);
  const auto tree_simple = test::collectives(topo, test::collectives_settings("tree", "simple"));
  CHECK_THROWS_WITH_AS((void)tree_simple.select(OpKind::all_reduce, iota(8), kMiB),
                       doctest::Contains("RCCL runs no tree with the simple protocol within one node"), ConfigError);
  // The same cluster as NVIDIA's (gpu.arch hopper) runs LL128 unforced at 8 MiB.
  const auto hopper = test::collectives(test::topology("mi300x_8x_ib400.yaml", {{"gpu.arch", "hopper"}}));
  CHECK(hopper.select(OpKind::all_gather, iota(8), 8 * kMiB).protocol == Protocol::ll128);
}
