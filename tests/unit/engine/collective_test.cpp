// Collectives alone on an idle cluster, against NCCL's cost model worked by hand. Each test case
// runs one simulation (SimGrid allows one engine per process; CTest runs each case on its own).
#include <doctest/doctest.h>

#include "config/topology.hpp"
#include "engine/simulator.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

config::TopologyConfig dgx_h100() {
  return config::load_topology(test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml", ConfigNode{}, "");
}

graph::Op collective(graph::OpKind kind, graph::Stream stream, double bytes) {
  graph::Op op;
  op.kind = kind;
  op.stream = stream;
  op.name = "collective";
  op.group = graph::Group::shard;
  op.bytes = bytes;
  return op;
}

engine::SimulationResult run(graph::StepGraph& g, const config::TopologyConfig& topo, int nodes) {
  const engine::RooflineModel compute(topo, true);
  const engine::RingAlgorithm ring;
  return engine::simulate(engine::SimulationInput{g, topo, nodes, compute, ring});
}

}  // namespace

TEST_CASE("one all-gather on 8 x H100 takes alpha + (n-1)/n S / B") {
  const auto topo = dgx_h100();
  graph::StepGraph g;
  g.info.world_size = 8;
  g.info.shard_group = 8;
  g.add_op(collective(graph::OpKind::all_gather, graph::Stream::all_gather, 1 * kGiB));
  const auto r = run(g, topo, 1);
  // alpha = NCCL ring base latency 8.4 us + 7 NVLink steps of 1 us; B = 450 GB/s x 0.8 = 360 GB/s
  // (the measured all-gather bus bandwidth on 8 x H100, nccl-model.md).
  const double expected = 8.4e-6 + 7 * 1e-6 + 7.0 / 8.0 * kGiB / 360e9;
  for (int rank = 0; rank < 8; ++rank) {
    CHECK(r.timeline.at(0, rank).end == doctest::Approx(expected).epsilon(0.01));
  }
  // Bus bandwidth as nccl-tests reports it: S / t x (n-1)/n.
  CHECK(kGiB / expected * 7 / 8 / 1e9 == doctest::Approx(360).epsilon(0.01));
}

TEST_CASE("an all-reduce moves twice the data of an all-gather") {
  const auto topo = dgx_h100();
  graph::StepGraph g;
  g.info.world_size = 8;
  g.info.shard_group = 8;
  g.add_op(collective(graph::OpKind::all_reduce, graph::Stream::all_reduce, 1 * kGiB));
  const auto r = run(g, topo, 1);
  const double expected = 8.4e-6 + 14 * 1e-6 + 2 * 7.0 / 8.0 * kGiB / 360e9;
  CHECK(r.timeline.at(0, 0).end == doctest::Approx(expected).epsilon(0.01));
}

TEST_CASE("across two nodes an all-gather is bounded by the NICs: busbw = 8 x NIC rate") {
  const auto topo = dgx_h100();
  graph::StepGraph g;
  g.info.world_size = 16;
  g.info.shard_group = 16;
  g.add_op(collective(graph::OpKind::all_gather, graph::Stream::all_gather, 1 * kGiB));
  const auto r = run(g, topo, 2);
  // Each GPU sends 15/16 S in all, 1/8 of it over its own NIC at 400 Gb/s x 0.95 = 47.5 GB/s
  // (NDR measured 46-49 GB/s) and the rest over NVLink at 360 GB/s; the NIC share is slower.
  const double nic = 15.0 / 16.0 * kGiB / 8 / 47.5e9;
  const double nvlink = 15.0 / 16.0 * kGiB * 7 / 8 / 360e9;
  CHECK(nic > nvlink);
  // Latency: 15 steps, one crossing the node boundary (NIC 2 us + switch 1 us), 14 on NVLink.
  const double expected = 8.4e-6 + 14 * 1e-6 + 3e-6 + nic;
  CHECK(r.timeline.at(0, 0).end == doctest::Approx(expected).epsilon(0.01));
  const double busbw = kGiB / expected * 15 / 16;
  CHECK(busbw / 1e9 == doctest::Approx(8 * 47.5).epsilon(0.01));
}

TEST_CASE("two all-gathers at once share NVLink: each takes twice as long") {
  const auto topo = dgx_h100();
  graph::StepGraph g;
  g.info.world_size = 8;
  g.info.shard_group = 8;
  g.add_op(collective(graph::OpKind::all_gather, graph::Stream::all_gather, 1 * kGiB));
  g.add_op(collective(graph::OpKind::reduce_scatter, graph::Stream::reduce_scatter, 1 * kGiB));
  const auto r = run(g, topo, 1);
  const double shared = 8.4e-6 + 7e-6 + 2 * 7.0 / 8.0 * kGiB / 360e9;
  CHECK(r.timeline.at(0, 0).end == doctest::Approx(shared).epsilon(0.01));
  CHECK(r.timeline.at(1, 0).end == doctest::Approx(shared).epsilon(0.01));
}
