#include "graph/outside_allocator.hpp"

#include <doctest/doctest.h>

#include "report/metrics.hpp"
#include "report_fixtures.hpp"

using namespace shardsim;

namespace {

config::TopologyConfig topology(double context_bytes, int channels) {
  config::TopologyConfig t = test::minimal_topology();
  t.gpu.context_memory = Bytes(context_bytes);
  t.node.nccl_channels = channels;
  return t;
}

}  // namespace

TEST_CASE("an NCCL connection keeps one buffer per protocol at NCCL's default sizes") {
  // LL: 8 lines x 512 threads x 8 steps x 16 B; LL128: 120 x 640 x 8 x 8 B; Simple: 1 << 22.
  CHECK(graph::kNcclConnectionBytes == 8.0 * 512 * 8 * 16 + 120.0 * 640 * 8 * 8 + 4194304.0);
  CHECK(graph::kNcclConnectionBytes == 9633792.0);
}

TEST_CASE("one communicator per parallel group of more than one rank, one connection per peer and channel") {
  graph::GraphInfo info;
  SUBCASE("a single GPU has the CUDA context and no NCCL") {
    const auto o = graph::outside_allocator(info, topology(400e6, 16));
    CHECK(o.communicators == 0);
    CHECK(o.nccl == 0);
    CHECK(o.total() == 400e6);
  }
  SUBCASE("FSDP over 8 GPUs: one ring communicator, 16 x 9,633,792 B") {
    info.world_size = 8;
    info.shard_group = 8;
    info.reshard_group = 8;
    const auto o = graph::outside_allocator(info, topology(400e6, 16));
    CHECK(o.communicators == 1);
    CHECK(o.nccl == doctest::Approx(154140672.0).scale(0));  // 16 x 9,633,792
  }
  SUBCASE("TP 8 x FSDP 4 with FSDP2 resharding to 2 after forward: three communicators") {
    info.world_size = 32;
    info.tp_group = 8;
    info.shard_group = 4;
    info.reshard_group = 2;
    const auto o = graph::outside_allocator(info, topology(0, 32));
    CHECK(o.communicators == 3);
    CHECK(o.nccl == doctest::Approx(3 * 32 * 9633792.0).scale(0));
  }
  SUBCASE("pipeline stages receive from the stage before and the one after") {
    info.world_size = 4;
    info.pp_group = 4;
    const auto o = graph::outside_allocator(info, topology(0, 8));
    CHECK(o.communicators == 1);
    CHECK(o.nccl == doctest::Approx(2 * 8 * 9633792.0).scale(0));
    info.pp_group = 2;
    info.world_size = 2;
    CHECK(graph::outside_allocator(info, topology(0, 8)).nccl == doctest::Approx(8 * 9633792.0).scale(0));
  }
}

TEST_CASE("what the CUDA context and NCCL hold is not the allocator's: a job that fits only without them is out of memory") {
  // One rank holding 79.7 GB of an 80 GB GPU: with no context it fits, with 400 MB of context
  // the allocator has 79.6 GB and the first segment cannot be reserved.
  graph::StepGraph g;
  g.info.world_size = 1;
  g.info.tokens_per_micro_step = 1000;
  g.info.initial_memory = {{graph::MemCategory::sharded_params, 79.7e9, false, graph::Pool::compute}};
  graph::Op step;
  step.kind = graph::OpKind::optimizer;
  step.stream = graph::Stream::compute;
  step.name = "optimizer";
  g.add_op(step);
  graph::Timeline t(1, 1);
  t.at(0, 0) = {0, 1};
  model::Model m;
  config::ScenarioConfig s;
  s.cluster.topology = topology(0, 16);
  CHECK_FALSE(report::summarize({s, m, g, t}).oom);
  s.cluster.topology = topology(400e6, 16);
  const auto sum = report::summarize({s, m, g, t});
  CHECK(sum.oom);
  CHECK(sum.outside.total() == 400e6);
}

TEST_CASE("NVLS's buffers: channels x 2 x 8 steps of 128 KiB for each head, one head per rank of the group on the node") {
  // nvls.cc ncclNvlsBufferSetup: nvlsChannels x 2 x (NCCL_NVLS_CHUNKSIZE x NCCL_STEPS) x nHeads.
  CHECK(graph::nvls_buffer_bytes(config::GpuArch::hopper, 8, 1) == 16.0 * 2 * 131072 * 8 * 8);  // 256 MiB
  CHECK(graph::nvls_buffer_bytes(config::GpuArch::hopper, 8, 1) == 268435456.0);
  CHECK(graph::nvls_buffer_bytes(config::GpuArch::hopper, 4, 2) == 134217728.0);
  CHECK(graph::nvls_buffer_bytes(config::GpuArch::blackwell, 8, 1) == 24.0 * 2 * 131072 * 8 * 8);
  CHECK(graph::nvls_buffer_bytes(config::GpuArch::blackwell, 8, 4) == 32.0 * 2 * 131072 * 8 * 8);
  CHECK(graph::nvls_buffer_bytes(config::GpuArch::blackwell, 72, 1) == 24.0 * 2 * 131072 * 8 * 32);  // at most 32 heads
}

TEST_CASE("a communicator holds the buffers of the algorithms its collectives ran: a ring's peer, a tree's two, NVLS's own") {
  graph::GraphInfo info;
  info.world_size = 32;
  info.tp_group = 8;
  info.shard_group = 4;
  info.reshard_group = 4;
  const auto t = topology(0, 16);
  const double set = 16 * 9633792.0;  // one connection's buffers on every channel
  using graph::CommunicatorUse;
  using graph::Group;
  SUBCASE("nothing known: a ring each") {
    CHECK(graph::outside_allocator(info, t).nccl == doctest::Approx(2 * set).scale(0));
  }
  SUBCASE("TP on NVLS alone, the shard group on rings and, for a small all-reduce, the tree") {
    const std::vector<CommunicatorUse> used{CommunicatorUse{Group::tp, 8, 1, false, false, true},
                                            CommunicatorUse{Group::shard, 1, 4, true, true, false}};
    const auto o = graph::outside_allocator(info, t, used);
    CHECK(o.communicators == 2);
    CHECK(o.nvls == 268435456.0);
    CHECK(o.tree == doctest::Approx(2 * set).scale(0));
    CHECK(o.nccl == doctest::Approx(3 * set + 268435456.0).scale(0));
  }
  SUBCASE("a group the list leaves out runs the ring") {
    const std::vector<CommunicatorUse> used{CommunicatorUse{Group::shard, 1, 4, false, true, false}};
    CHECK(graph::outside_allocator(info, t, used).nccl == doctest::Approx(3 * set).scale(0));
  }
}

TEST_CASE("a pipeline's sends across nodes use NCCL's shared pools, not a connection's buffers per channel") {
  // net.cc: a send pool and a receive pool, each pow2Up(channels) x 16 shared steps x 128 KiB.
  CHECK(graph::net_p2p_buffer_bytes(16) == 2.0 * 16 * 16 * 131072);  // 64 MiB
  CHECK(graph::net_p2p_buffer_bytes(24) == 2.0 * 32 * 16 * 131072);
  graph::GraphInfo info;
  info.world_size = 32;
  info.pp_group = 4;
  const auto t = topology(0, 16);
  const std::vector<graph::CommunicatorUse> across{graph::CommunicatorUse{graph::Group::pp, 1, 4}};
  const auto o = graph::outside_allocator(info, t, across);
  CHECK(o.communicators == 1);
  CHECK(o.p2p == 67108864.0);
  CHECK(o.nccl == 67108864.0);
  // Stages on one node: a connection from each neighbouring stage on every channel, as before.
  const std::vector<graph::CommunicatorUse> within{graph::CommunicatorUse{graph::Group::pp, 4, 1}};
  CHECK(graph::outside_allocator(info, t, within).nccl == doctest::Approx(2 * 16 * 9633792.0).scale(0));
}
