// The CPU that issues the ops (host.kernel_dispatch): the GPU starts an op no sooner than the CPU
// has issued its first kernel and ends it no sooner than its last; after a CPU wait the CPU issues
// again from the moment it was released. Every figure below is worked by hand from the ops'
// times: h100_sxm_8x_ib400.yaml prices a kernel launch at 4 us on the GPU.
#include <doctest/doctest.h>

#include <array>

#include "collective_support.hpp"
#include "engine/simulator.hpp"
#include "graph/issuer.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

constexpr double kUs = 1e-6;
constexpr double kHbm = 3.35e12 * 0.85;  // the topology's achieved HBM bandwidth

// `count` compute ops one after another on one GPU's compute stream, each `gpu_us` of
// memory-bound work in `kernels` kernels; then, if `wait`, a CPU wait on the last op and one more
// op of a single kernel; the CPU costs `dispatch_us` per kernel and `hook_us` per op before its
// kernels (FSDP's hooks, op.cpu_s).
// When each op started and ended (us), and how long the compute stream waited for the CPU (us).
struct Run {
  std::array<graph::Interval, 12> ops{};  // in_child returns a plain value
  double for_cpu = 0;
  const graph::Interval& operator[](std::size_t i) const { return ops.at(i); }
};

Run chain(int count, double gpu_us, int kernels, double dispatch_us, bool wait = false, double hook_us = 0) {
  return test::in_child([=] {
    auto topo = test::topology("h100_sxm_8x_ib400.yaml");
    topo.host.kernel_dispatch = Seconds(dispatch_us * kUs);
    const engine::RooflineModel compute(topo, true);
    const auto nccl = test::collectives(topo, test::collectives_settings());
    graph::StepGraph g;
    g.info.world_size = 8;
    g.info.shard_group = 8;
    graph::Issuer io(g);
    const auto work = [&](std::string name, double us, int launches) {
      graph::Op op = graph::make_op(graph::OpKind::forward, graph::Stream::compute, std::move(name), -1);
      op.work.memory_bytes = us * kUs * kHbm;
      op.work.launches = launches;
      op.cpu_s = hook_us * kUs;
      return io.issue(std::move(op));
    };
    int last = -1;
    for (int i = 0; i < count; ++i) last = work("FWD " + std::to_string(i), gpu_us, kernels);
    if (wait) {
      io.cpu_wait(last, "wait");
      work("after", gpu_us, 1);
    }
    engine::SimulationInput in{g, topo, 1, compute, nccl};
    const auto r = engine::simulate(in);
    Run out;
    for (std::size_t o = 0; o < g.size(); ++o) {
      const graph::Interval& i = r.timeline.at(static_cast<int>(o), 0);
      out.ops.at(o) = {i.start / kUs, i.end / kUs};
    }
    for (const graph::Interval& i : r.waiting_for_cpu.at(0)) out.for_cpu += (i.end - i.start) / kUs;
    return out;
  });
}

}  // namespace

TEST_CASE("a CPU-bound step: dispatch exceeds GPU time and paces the GPU") {
  // 10 ops of 5 kernels, each 10 us of work + 5 x 4 us of launches = 30 us on the GPU; the CPU
  // spends 5 x 20 = 100 us issuing each. Op i's first kernel is issued at 100 i + 20 us, its last
  // at 100 (i + 1): the GPU runs it from then on and ends it at 100 (i + 1) us, idle in between.
  const auto gpu = chain(10, 10, 5, 0);
  CHECK(gpu[9].end == doctest::Approx(300).scale(0));  // without the CPU: 10 x 30 us back to back
  const auto cpu = chain(10, 10, 5, 20);
  for (int i = 0; i < 10; ++i) {
    CAPTURE(i);
    CHECK(cpu[static_cast<std::size_t>(i)].start == doctest::Approx(100 * i + 20).scale(0));
    CHECK(cpu[static_cast<std::size_t>(i)].end == doctest::Approx(100 * (i + 1)).scale(0));
  }
  // Idle for the CPU: 20 us before each op's first kernel, and 50 of each op's 100 us on the GPU.
  CHECK(cpu.for_cpu == doctest::Approx(10 * (20 + 50)).scale(0));
  CHECK(gpu.for_cpu == 0);
}

TEST_CASE("a GPU-bound step: the CPU runs ahead and costs only the first kernel's dispatch") {
  // 1,000 us of work + 20 us of launches per op against 100 us of dispatch: the GPU never waits
  // after the first kernel (20 us), so the step ends 20 us later than without the CPU.
  const auto gpu = chain(10, 1000, 5, 0);
  const auto cpu = chain(10, 1000, 5, 20);
  CHECK(gpu[9].end == doctest::Approx(10 * 1020).scale(0));
  CHECK(cpu[9].end == doctest::Approx(10 * 1020 + 20).scale(0));
  CHECK(cpu.for_cpu == doctest::Approx(20).scale(0));
}

TEST_CASE("after a CPU wait the CPU issues again from when it was released") {
  // Op 0 (1 kernel): issued at 20 us, ends at 20 + 1,000 + 4. The CPU blocks on it (the wait
  // op) until then, and only then issues the next op's kernel: it starts 20 us later, at 1,044,
  // where without the CPU it would start as the wait passes, at 1,004.
  const auto gpu = chain(1, 1000, 1, 0, true);
  const auto cpu = chain(1, 1000, 1, 20, true);
  CHECK(gpu[2].start == doctest::Approx(1004).scale(0));
  CHECK(cpu[0].end == doctest::Approx(1024).scale(0));
  CHECK(cpu[1].start == doctest::Approx(1024).scale(0));  // the wait passes as op 0 ends
  CHECK(cpu[2].start == doctest::Approx(1044).scale(0));
  CHECK(cpu[2].end == doctest::Approx(1044 + 1004).scale(0));
  CHECK(cpu.for_cpu == doctest::Approx(20 + 20).scale(0));  // before op 0, and after the wait
}

TEST_CASE("FSDP's hooks run on the CPU before an op's first kernel") {
  // 10 ops of 5 kernels (30 us on the GPU each, as above) whose hooks take 100 us of CPU each.
  // Without a dispatch cost the CPU issues op i's kernels at once after its hook, at 100 (i + 1):
  // it runs from then for 30 us.
  const auto hooks = chain(10, 10, 5, 0, false, 100);
  for (int i = 0; i < 10; ++i) {
    CAPTURE(i);
    CHECK(hooks[static_cast<std::size_t>(i)].start == doctest::Approx(100 * (i + 1)).scale(0));
    CHECK(hooks[static_cast<std::size_t>(i)].end == doctest::Approx(100 * (i + 1) + 30).scale(0));
  }
  CHECK(hooks.for_cpu == doctest::Approx(100 + 9 * 70).scale(0));
  // With 20 us a kernel too, op i's hook ends at 200 i + 100, its first kernel is issued 20 us
  // later and its last at 200 (i + 1), where the op ends.
  const auto both = chain(10, 10, 5, 20, false, 100);
  for (int i = 0; i < 10; ++i) {
    CAPTURE(i);
    CHECK(both[static_cast<std::size_t>(i)].start == doctest::Approx(200 * i + 120).scale(0));
    CHECK(both[static_cast<std::size_t>(i)].end == doctest::Approx(200 * (i + 1)).scale(0));
  }
}
