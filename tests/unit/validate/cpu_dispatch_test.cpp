// The CPU's time per kernel launched, out of a profiler trace (validate/cpu_dispatch.hpp).
#include "validate/cpu_dispatch.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <optional>

#include "real_data.hpp"
#include "test_support.hpp"
#include "validate/kineto_events.hpp"

using namespace shardsim;

TEST_CASE("CPU dispatch from a trace: the mean launch-to-launch gap where the thread was not held") {
  // Thread 1 launches at 0, 10, 30, (a cudaStreamSynchronize at 35), 100, 110, 200; thread 2 at
  // 115, 125 (a launch call of 5,000 us: the queue was full) and 6,000. Kept: 0->10, 10->30,
  // 100->110 on thread 1 and 115->125 on thread 2, 50 us over 4 gaps. Left out: 30->100 (the
  // synchronize), 110->200 (thread 2 launched meanwhile), 125->6000 (the blocked call).
  validate::KinetoEvents ev;
  const auto launch = [&](std::int64_t correlation, double ts, std::int64_t tid, double dur = 5) {
    ev.launches.push_back({correlation, ts, tid, dur, false});
    validate::GpuOp op;
    op.correlation = correlation;
    op.ts = ts + 20;
    ev.gpu.push_back(op);
  };
  launch(1, 0, 1);
  launch(2, 10, 1);
  launch(3, 30, 1);
  ev.launches.push_back({100, 35, 1, 40, true});  // cudaStreamSynchronize: no GPU op of its own
  launch(4, 100, 1);
  launch(5, 110, 1);
  launch(6, 115, 2);
  launch(7, 125, 2, 5000);
  launch(8, 200, 1);
  launch(9, 6000, 2);
  ev.launches.push_back({101, 50, 1, 1, false});  // a runtime call that launched nothing (cudaEventRecord): ignored
  const auto d = validate::cpu_dispatch(ev);
  REQUIRE(d.has_value());
  CHECK(d->per_kernel == doctest::Approx(12.5e-6).scale(0));
  CHECK(d->gaps == 4);
  CHECK(d->left_out == 3);
  CHECK(d->threads == 2);
  CHECK_FALSE(validate::cpu_dispatch(validate::KinetoEvents{}).has_value());
}

namespace {

// The estimate for a real trace of ../shared/real-data, described in the test's output; none
// where the trace is absent (the test then skips).
std::optional<validate::DispatchEstimate> from_real_trace(const char* name) {
  const auto file = test::real_data(name);
  if (file.empty()) return std::nullopt;
  auto d = validate::cpu_dispatch(validate::read_trace_file(file).kineto);
  REQUIRE(d.has_value());
  MESSAGE(validate::describe(*d));
  return d;
}

}  // namespace

// Real data: DDP ResNet-50 on 2 x A100 (../shared/real-data, HTA, MIT), CPU-bound. Read with
// Python's json module from the step annotations: "## forward ##" lasts 103.1 ms and its thread
// launches 453 GPU ops in it (228 us each); "## backward ##" 101.1 ms with 791 launches on
// autograd's thread and 6 on the main one (126.8 us each): together 204.2 ms for 1,250
// launches, 163.4 us each. The estimate (every step's gaps, the optimizer's and those between
// steps too) must come within 5 % of that, between the two paces.
TEST_CASE("CPU dispatch from a real trace: DDP ResNet-50 on A100 issues a kernel every 130-230 us") {
  const auto d = from_real_trace("hta_ddp_resnet50_2xa100_rank0.json.gz");
  if (!d) return;
  CHECK(d->per_kernel == doctest::Approx(163.4e-6).epsilon(0.05).scale(0));
  CHECK(d->per_kernel > 126.8e-6);
  CHECK(d->per_kernel < 227.6e-6);
  CHECK(d->threads == 2);
}

// Real data: DDP ResNet-18 on MI300X (../shared/real-data, TraceLens, MIT). PyTorch's caching
// allocator frees device memory there (hipFree) hundreds of times, and hipFree waits for the GPU:
// 469 calls of over 1 ms, 3.3 s in all (Python's json module over the trace). Counting the gaps
// across them put the CPU at 1,368 us a kernel. Without them the estimate is no less than the
// launch calls' own cost (3.25 us each on average, 2,360 calls) and far below the 1,368 us: the
// thread's median launch-to-launch gap is 3.9 us, and a gap of 30 us would already be a slow
// eager step's pace.
TEST_CASE("CPU dispatch from a real trace: DDP ResNet-18 on MI300X, where hipFree holds the thread") {
  const auto d = from_real_trace("tracelens_ddp_resnet18_mi300x.json.gz");
  if (!d) return;
  CHECK(d->per_kernel > 3.25e-6);
  CHECK(d->per_kernel < 30e-6);
  CHECK(d->left_out > 469);
}
