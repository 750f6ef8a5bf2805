// Several jobs on one fabric (cluster.jobs, cluster.placement, fabric.nodes_per_leaf): jobs
// contend only where they share links. Expected times by hand, as in fabric_test.cpp: the DGX
// H100 nodes of h100_sxm_8x_ib400_fat_tree_2to1.yaml (8 NICs of 400 Gb/s x 0.95 = 47.5 GB/s per
// node) under leaf switches of 2 nodes whose uplinks carry half their downlinks:
// 2 x 8 x 47.5 / 2 = 380 GB/s per leaf. NCCL's ring constants for 16 ranks on 2 nodes (8.4 us
// base; 14 steps over NVLink at 3.4 us, one over the network at 14 us, Simple).
#include <doctest/doctest.h>

#include <array>

#include "collective_support.hpp"

using namespace shardsim;
using graph::OpKind;

namespace {

constexpr double kS = 4 * kGiB;
constexpr double kUs = 1e-6;
constexpr double kLatency = (8.4 + 14 * 3.4 + 14) * kUs;

// What a run of all_gather_per_job gives (trivially copyable: it comes back from a child process).
struct JobEnds {
  std::array<double, 3> end{};  // per job, at most 3
  int timeline_ranks = 0;       // of the result's timeline: job 0's
};

// One all-gather of kS over each job's `nodes` nodes (SimGrid runs once per process: call it in
// a child).
JobEnds all_gather_per_job(int jobs, config::Placement placement, engine::FlowGranularity flows, int nodes = 2) {
  const auto topo = test::topology("h100_sxm_8x_ib400_fat_tree_2to1.yaml", {{"fabric.nodes_per_leaf", "2"}});
  const int n = nodes * topo.node.gpus;
  const auto g = test::collectives_graph(n, n, {test::collective_op(OpKind::all_gather, kS)});
  const auto c = test::collectives(topo);
  const engine::RooflineModel compute(topo, true);
  engine::SimulationInput in{g, topo, nodes, compute, c, flows, config::SimulationMode::full};
  in.jobs = jobs;
  in.placement = placement;
  const auto r = engine::simulate(in);
  JobEnds out;
  for (std::size_t j = 0; j < r.job_ends.size() && j < out.end.size(); ++j) out.end[j] = r.job_ends[j];
  out.timeline_ranks = r.timeline.world();
  return out;
}

}  // namespace

TEST_CASE("jobs: packed under their own leaves, two jobs run as fast as one alone, interleaved they share the leaves' uplinks") {
  using config::Placement;
  using engine::FlowGranularity;
  // Alone, or packed (job 0 on nodes 0-1 under leaf 0, job 1 on nodes 2-3 under leaf 1), the
  // ring stays below its leaf: each of a node's 8 NICs carries 15/16 S / 8 at 47.5 GB/s.
  const double alone = kLatency + 15.0 / 16.0 * kS / 8 / 47.5e9;
  const auto one = test::in_child([&] { return all_gather_per_job(1, Placement::packed, FlowGranularity::path); });
  CHECK(one.end[0] == doctest::Approx(alone).epsilon(1e-6).scale(0));
  const auto packed = test::in_child([&] { return all_gather_per_job(2, Placement::packed, FlowGranularity::path); });
  CHECK(packed.timeline_ranks == 16);  // job 0's
  for (int j = 0; j < 2; ++j) CHECK(packed.end.at(j) == doctest::Approx(alone).epsilon(1e-6).scale(0));
  // Interleaved (job 0 on nodes 0 and 2, job 1 on nodes 1 and 3), each job's ring crosses from
  // leaf 0 to leaf 1 and back: two nodes' 15/16 S leave each leaf through its 380 GB/s uplink.
  const double shared = kLatency + 2 * 15.0 / 16.0 * kS / 380e9;
  const auto interleaved = test::in_child([&] { return all_gather_per_job(2, Placement::interleaved, FlowGranularity::path); });
  for (int j = 0; j < 2; ++j) CHECK(interleaved.end.at(j) == doctest::Approx(shared).epsilon(1e-6).scale(0));
  // One job interleaved with nobody is the job alone.
  const auto solo = test::in_child([&] { return all_gather_per_job(1, Placement::interleaved, FlowGranularity::path); });
  CHECK(solo.end[0] == doctest::Approx(alone).epsilon(1e-6).scale(0));
}

TEST_CASE("jobs: path and edge flows agree for interleaved jobs whose rings stay within a leaf for some hops and cross it for others") {
  using config::Placement;
  using engine::FlowGranularity;
  // 2 jobs of 3 nodes interleaved over leaves of 2 nodes: job 0 on nodes 0, 2, 4 (leaves 0, 1, 2),
  // job 1 on nodes 1, 3, 5; 3 jobs of 2 nodes: job 0 on nodes 0 and 3 (leaves 0 and 1).
  for (const auto& [jobs, nodes] : {std::pair{2, 3}, std::pair{3, 2}}) {
    CAPTURE(jobs);
    const auto path = test::in_child([&] { return all_gather_per_job(jobs, Placement::interleaved, FlowGranularity::path, nodes); });
    const auto edge = test::in_child([&] { return all_gather_per_job(jobs, Placement::interleaved, FlowGranularity::edge, nodes); });
    for (int j = 0; j < jobs; ++j) CHECK(path.end.at(j) == doctest::Approx(edge.end.at(j)).epsilon(1e-6).scale(0));
  }
}

TEST_CASE("jobs: a leaf of 2 nodes keeps a 2-node ring off its uplinks and the same ring across two leaves is bound by them") {
  using engine::FlowGranularity;
  // Nodes per leaf 1 is the per-node uplink of fabric_test.cpp: 15/16 S through 190 GB/s.
  const auto topo1 = test::topology("h100_sxm_8x_ib400_fat_tree_2to1.yaml");
  const auto topo2 = test::topology("h100_sxm_8x_ib400_fat_tree_2to1.yaml", {{"fabric.nodes_per_leaf", "2"}});
  auto run = [](const config::TopologyConfig& topo) {
    const auto g = test::collectives_graph(16, 16, {test::collective_op(OpKind::all_gather, kS)});
    const auto c = test::collectives(topo);
    return test::simulate(g, topo, 2, c).timeline.at(0, 0).end;
  };
  CHECK(test::in_child([&] { return run(topo1); }) == doctest::Approx(kLatency + 15.0 / 16.0 * kS / 190e9).epsilon(1e-6).scale(0));
  CHECK(test::in_child([&] { return run(topo2); }) == doctest::Approx(kLatency + 15.0 / 16.0 * kS / 8 / 47.5e9).epsilon(1e-6).scale(0));
}
