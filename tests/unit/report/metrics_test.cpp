#include "report/metrics.hpp"

#include <doctest/doctest.h>

using namespace shardsim;

namespace {

graph::Op op(graph::OpKind kind, graph::Stream stream, const char* name) {
  graph::Op o;
  o.kind = kind;
  o.stream = stream;
  o.name = name;
  if (kind == graph::OpKind::all_gather) o.group = graph::Group::shard;
  return o;
}

}  // namespace

TEST_CASE("exposed communication is collective time not covered by compute") {
  // Compute [0, 1] and [2, 3]; an all-gather [0.5, 2.5]: exposed = [1, 2] = 1 s.
  graph::StepGraph g;
  g.info.world_size = 1;
  g.info.tokens_per_micro_step = 1000;
  g.add_op(op(graph::OpKind::forward, graph::Stream::compute, "FWD a"));
  g.add_op(op(graph::OpKind::all_gather, graph::Stream::all_gather, "AG b"));
  g.add_op(op(graph::OpKind::optimizer, graph::Stream::compute, "optimizer"));
  engine::Timeline t(3, 1);
  t.at(0, 0) = {0, 1};
  t.at(1, 0) = {0.5, 2.5};
  t.at(2, 0) = {2, 3};
  config::ScenarioConfig s;
  s.cluster.topology.gpu.memory = Bytes(80e9);
  s.cluster.topology.gpu.peak_bf16 = FlopRate(1e15);
  s.cluster.topology.gpu.peak_fp32 = FlopRate(1e14);
  model::Model m;
  const auto sum = report::summarize({s, m, g, t});
  CHECK(sum.step_time == doctest::Approx(3.0));
  CHECK(sum.compute_s == doctest::Approx(2.0));
  CHECK(sum.comm_s == doctest::Approx(2.0));
  CHECK(sum.exposed_comm_s == doctest::Approx(1.0));
  CHECK(sum.tokens_per_s_per_gpu == doctest::Approx(1000.0 / 3.0));
}

TEST_CASE("the memory timeline adds allocations and frees in time order, frees first on ties") {
  graph::StepGraph g;
  g.info.world_size = 1;
  g.info.initial_memory[static_cast<std::size_t>(graph::MemCategory::sharded_params)] = 100;
  auto a = op(graph::OpKind::forward, graph::Stream::compute, "A");
  a.memory = {{graph::MemCategory::activations, 10, false}, {graph::MemCategory::activations, -10, true}};
  auto b = op(graph::OpKind::forward, graph::Stream::compute, "B");
  b.memory = {{graph::MemCategory::unsharded_params, 5, false}, {graph::MemCategory::unsharded_params, -5, true}};
  auto c = op(graph::OpKind::forward, graph::Stream::compute, "C");
  c.memory = {{graph::MemCategory::activations, 7, false}, {graph::MemCategory::activations, -7, true}};
  g.add_op(a);
  g.add_op(b);
  g.add_op(c);
  engine::Timeline t(3, 1);
  t.at(0, 0) = {0, 1};    // A holds 10 over [0, 1]
  t.at(1, 0) = {0.5, 2};  // B holds 5 over [0.5, 2]
  t.at(2, 0) = {1, 3};    // C starts as A ends: A's 10 is freed before C's 7 arrives
  const auto m = report::memory_timeline(g, t, 0);
  CHECK(m.peak == doctest::Approx(115));
  CHECK(m.peak_time == doctest::Approx(0.5));
  CHECK(m.peak_op == "B");
  CHECK(m.points.back().total() == doctest::Approx(100));
}
