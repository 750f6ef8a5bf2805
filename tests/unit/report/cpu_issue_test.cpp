// The CPU thread's issue times (report/cpu_issue.hpp) and the allocations made at them.
// Every figure is worked by hand from the timelines below.
#include "report/cpu_issue.hpp"

#include <doctest/doctest.h>

#include "report/metrics.hpp"

using namespace shardsim;
using graph::OpKind;
using graph::Stream;

namespace {

constexpr double MiB = 1 << 20;

graph::Op op(OpKind kind, Stream stream, int launches) {
  graph::Op o;
  o.kind = kind;
  o.stream = stream;
  o.name = std::string(graph::to_string(kind));
  o.work.launches = launches;
  if (kind == OpKind::all_gather) o.group = graph::Group::shard;
  return o;
}

}  // namespace

TEST_CASE("cpu issue: the CPU runs ahead until the launch queue is full, then waits for the GPU to drain it") {
  // Four compute ops of 10 kernels each, 1 s apart on the GPU; a queue of 25 launches. Ops 0-1
  // (20 kernels) go out at t = 0. Op 2 needs 10 more slots: 20 + 10 - 25 = 5 must drain, i.e.
  // op 0 (kernels 1-10) must end, at 1 s. Op 3 needs kernels 1-20 gone: op 1 ends at 2 s.
  graph::StepGraph g;
  for (int i = 0; i < 4; ++i) g.add_op(op(OpKind::forward, Stream::compute, 10));
  graph::Timeline t(4, 1);
  for (int i = 0; i < 4; ++i) t.at(i, 0) = {static_cast<double>(i), static_cast<double>(i + 1)};
  const auto issued = report::cpu_issue_times(g, t, 0, 25);
  CHECK(issued[0] == 0.0);
  CHECK(issued[1] == 0.0);
  CHECK(issued[2] == doctest::Approx(1.0).scale(0));
  CHECK(issued[3] == doctest::Approx(2.0).scale(0));
  // A deep queue: everything at t = 0.
  for (double x : report::cpu_issue_times(g, t, 0, 1024)) CHECK(x == 0.0);
}

TEST_CASE("cpu issue: a CPU wait blocks everything issued after it until its event ran, but is never later than the GPU start") {
  // compute [0, 2]; a CPU wait on it (starts at 2); an all-gather the GPU ran at [0.5, 1.5]
  // after the wait in program order cannot have been issued later than it started: 0.5; the next
  // compute op is issued at 2.
  graph::StepGraph g;
  g.add_op(op(OpKind::forward, Stream::compute, 5));
  g.add_op(op(OpKind::cpu_wait, Stream::cpu, 0));
  g.add_op(op(OpKind::all_gather, Stream::nccl, 0));
  g.add_op(op(OpKind::forward, Stream::compute, 5));
  graph::Timeline t(4, 1);
  t.at(0, 0) = {0, 2};
  t.at(1, 0) = {2, 2};
  t.at(2, 0) = {0.5, 1.5};
  t.at(3, 0) = {2.5, 3};
  const auto issued = report::cpu_issue_times(g, t, 0, 1024);
  CHECK(issued[1] == doctest::Approx(2.0).scale(0));
  CHECK(issued[2] == doctest::Approx(0.5).scale(0));
  CHECK(issued[3] == doctest::Approx(2.0).scale(0));
}

TEST_CASE("memory: allocations marked at_issue happen when the CPU issues the op, so unlimited all-gathers pile up") {
  // FSDP1 without the rate limiter: three all-gathers of 30 MiB (each freed with record_stream at
  // the end of its unit's compute), issued by a CPU that nothing holds back. On the GPU they run
  // just before their compute, [i, i + 0.5], compute [i + 0.5, i + 1]. Allocated at GPU start,
  // at most one buffer is live (each is freed at i + 1, before the next starts at i + 1): one
  // 30 MiB segment. Allocated at CPU issue (t = 0), all three are live at once: 90 MiB.
  graph::StepGraph g;
  g.info.world_size = 1;
  for (int u = 0; u < 3; ++u) {
    auto ag = op(OpKind::all_gather, Stream::nccl, 1);
    ag.memory = {{graph::MemCategory::unsharded_params, 30 * MiB, false, graph::Pool::all_gather, true}};
    auto fwd = op(OpKind::forward, Stream::compute, 30);
    fwd.memory = {{graph::MemCategory::unsharded_params, -30 * MiB, true, graph::Pool::all_gather}};
    g.add_op(ag);
    g.add_op(fwd);
  }
  graph::Timeline t(6, 1);
  for (int u = 0; u < 3; ++u) {
    t.at(2 * u, 0) = {u + 0.0, u + 0.5};
    t.at(2 * u + 1, 0) = {u + 0.5, u + 1.0};
  }
  const auto ahead = report::memory_timeline(g, t, 0, 1024);
  CHECK(ahead.peak == doctest::Approx(90 * MiB).scale(0));
  CHECK(ahead.peak_reserved == doctest::Approx(90 * MiB).scale(0));
  // A queue of 40 launches holds the CPU back: AG 1 (kernel 32) goes out at 0; unit 1's compute
  // (kernels 33-62) needs kernels 1-22 done, so unit 0's compute (kernels 2-31) must end, at
  // 1 s; AG 2 follows it in program order. By then unit 0's buffer is free and AG 2 reuses its
  // block: 60 MiB.
  const auto held = report::memory_timeline(g, t, 0, 40);
  CHECK(held.peak == doctest::Approx(60 * MiB).scale(0));
  CHECK(held.peak_reserved == doctest::Approx(60 * MiB).scale(0));
  // Without the at_issue mark, allocations at GPU start: one buffer at a time.
  for (std::size_t o = 0; o < g.size(); o += 2) g.op(static_cast<int>(o)).memory[0].at_issue = false;
  const auto gpu = report::memory_timeline(g, t, 0, 1024);
  CHECK(gpu.peak == doctest::Approx(30 * MiB).scale(0));
}

TEST_CASE("cpu issue: each kernel costs the CPU its dispatch") {
  // 0.1 s of CPU per kernel; the GPU timeline as the engine would give it (an op starts once its
  // first kernel is issued). Op 0 (2 kernels): first kernel issued at 0.1, last at 0.2, run at
  // [0.1, 0.3]. Op 1 (3): first at 0.3, last at 0.5, run at [0.5, 0.6]: the stream is idle from
  // 0.3 but the CPU had issued its first kernel by then (the gap is something else's). Op 2 (1):
  // at 0.6, run at [0.6, 0.7]. Op 3 (4): first at 0.7, last at 1.0, run at [0.9, 1.0].
  graph::StepGraph g;
  for (int k : {2, 3, 1, 4}) g.add_op(op(OpKind::forward, Stream::compute, k));
  graph::Timeline t(4, 1);
  t.at(0, 0) = {0.1, 0.3};
  t.at(1, 0) = {0.5, 0.6};
  t.at(2, 0) = {0.6, 0.7};
  t.at(3, 0) = {0.9, 1.0};
  const report::IssueRules rules(1024, 0.1);
  const auto issued = report::cpu_issue_times(g, t, 0, rules);  // the last kernel, never later than the GPU start
  CHECK(issued[0] == doctest::Approx(0.1).scale(0));
  CHECK(issued[1] == doctest::Approx(0.5).scale(0));
  CHECK(issued[2] == doctest::Approx(0.6).scale(0));
  CHECK(issued[3] == doctest::Approx(0.9).scale(0));
}
