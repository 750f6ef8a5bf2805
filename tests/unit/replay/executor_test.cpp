// The replay executor on the CPU backend (one rank, no MPI): every op runs once, after everything
// it depends on, and ops of one stream never overlap; checked against the graph's edges.
#include "replay/executor.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/local_comm.hpp"
#include "fixtures/fixtures.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

graph::StepGraph tiny(int gpus) {
  const std::vector<std::string> set{fmt::format("cluster.overrides.node.gpus={}", gpus)};
  return test::prepared("tests/data/tiny_llama.yaml", set).graph;
}

std::vector<graph::Interval> replay_cpu(const graph::StepGraph& g) {
  replay::CpuBackend b(std::make_unique<replay::LocalComm>(), {0.002, 0.01});
  replay::Watchdog w(60, [](const std::string& m) { FAIL(m); });
  return replay::replay_step(g, b, w, {}).ops;
}

}  // namespace

TEST_CASE("a replayed step respects every edge and every stream's order") {
  const auto g = tiny(1);
  const auto t = replay_cpu(g);
  REQUIRE(t.size() == g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(g.op(static_cast<int>(i)).name);
    CHECK(t[i].start >= 0);
    CHECK(t[i].end >= t[i].start);
    for (const auto& [pred, kind] : g.predecessors(static_cast<int>(i))) {
      CHECK(t[i].start >= t[static_cast<std::size_t>(pred)].end);
    }
  }
  std::map<graph::Stream, double> stream_end;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto& op = g.op(static_cast<int>(i));
    if (op.kind == graph::OpKind::cpu_wait) continue;
    CHECK(t[i].start >= stream_end[op.stream]);
    stream_end[op.stream] = t[i].end;
  }
}

TEST_CASE("a cpu_wait op sits at the end of what it waited for") {
  graph::StepGraph g;
  g.info.world_size = 1;
  graph::Op fwd;
  fwd.name = "FWD";
  fwd.work.gemms = {{256, 256, 256}};
  graph::Op wait;
  wait.kind = graph::OpKind::cpu_wait;
  wait.stream = graph::Stream::cpu;
  wait.name = "limiter wait";
  graph::Op ag;
  ag.kind = graph::OpKind::all_gather;
  ag.stream = graph::Stream::nccl;
  ag.group = graph::Group::shard;
  ag.bytes = 1e6;
  ag.name = "AG";
  g.add_op(fwd);
  g.add_op(wait);
  g.add_op(ag);
  g.add_edge(0, 1, graph::EdgeKind::rate_limit);
  g.add_edge(1, 2, graph::EdgeKind::cpu);
  const auto t = replay_cpu(g);
  CHECK(t[1].start == t[0].end);
  CHECK(t[1].end == t[0].end);
  CHECK(t[2].start >= t[0].end);  // issued only after the CPU saw FWD finish
}

TEST_CASE("graphs that cannot be replayed are refused with what to do") {
  const auto g = tiny(2);
  try {
    replay::check_replayable(g, 4, "g.json");
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "g.json: error: info.world_size: the graph is for 2 ranks; 4 were started (export it for 4 GPUs, e.g. with --set "
          "cluster.overrides.node.gpus=4, or start 2 ranks)");
  }
  graph::StepGraph back;
  back.info.world_size = 1;
  back.add_op(graph::Op{});
  back.add_op(graph::Op{});
  back.add_edge(1, 0, graph::EdgeKind::data);
  CHECK_THROWS_AS(replay::check_replayable(back, 1, "b.json"), ConfigError);
  // Async TP's copies, context parallelism's ring and pipeline stages replay (their ring steps
  // and sends between stages: tests/validation/cpu_ring.cmake, cpu_pp.cmake).
  const std::vector<std::vector<std::string>> jobs{
      {"parallelism.cp=2"}, {"parallelism.pp=2"}, {"parallelism.tp=2", "training.compile=true", "parallelism.tp_async=true"}};
  for (auto sets : jobs) {
    CAPTURE(sets.back());
    sets.insert(sets.end(), {"cluster.overrides.node.gpus=2", "fsdp.version=2"});
    CHECK_NOTHROW(replay::check_replayable(test::prepared("tests/data/tiny_llama.yaml", sets).graph, 2, "x.json"));
  }
}

TEST_CASE("ranks' times are merged onto the earliest t0 when the clock is shared") {
  // Two ops; rank 0 left the start barrier at clock 100.0 s, rank 1 at 100.5 s.
  const std::vector<double> gathered{100.0, 0, 1, 1, 2,   // rank 0: t0, op 0 [0,1], op 1 [1,2]
                                     100.5, 0, 1, 1, 3};  // rank 1: the same, half a second later
  const auto t = replay::merge_ranks(2, 2, gathered);
  CHECK(t.at(0, 0).start == 0);
  CHECK(t.at(0, 1).start == 0.5);
  CHECK(t.at(1, 1).end == 3.5);
  // Without a shared clock (NaN), each rank's t0 is taken as the same instant.
  const std::vector<double> apart{std::nan(""), 0, 1, 1, 2, std::nan(""), 0, 1, 1, 3};
  CHECK(replay::merge_ranks(2, 2, apart).at(1, 1).end == 3);
}
