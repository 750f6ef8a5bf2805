// The host memory a CPU replay takes, worked out by hand for a two-op graph, and the refusal of a
// replay that would not fit, with scale flags that do.
#include "cpu/host_memory.hpp"

#include <doctest/doctest.h>

#include "core/args.hpp"

using namespace shardsim;

namespace {

graph::StepGraph two_ops() {
  graph::StepGraph g;
  graph::Op fwd;
  fwd.kind = graph::OpKind::forward;
  fwd.stream = graph::Stream::compute;
  fwd.name = "FWD";
  fwd.work.gemms.push_back(graph::Gemm{128, 256, 64});
  (void)g.add_op(fwd);
  graph::Op ag;
  ag.kind = graph::OpKind::all_gather;
  ag.stream = graph::Stream::nccl;
  ag.name = "AG";
  ag.group = graph::Group::shard;
  ag.bytes = 1e6;
  (void)g.add_op(ag);
  return g;
}

}  // namespace

TEST_CASE("a CPU replay's host memory per rank, by hand") {
  // The compute stream's workspace: GEMM operands of m k = 8,192, n k = 16,384 and m n = 32,768
  // floats, each reserved with 10% room and 64 more: 9,076 + 18,087 + 36,109 = 63,272 floats =
  // 253,088 bytes; copy buffers of 64 bytes each (no copy): 128. The all-gather's communicator:
  // send and receive buffers of 1 MB: 2,000,000. In all 2,253,216 bytes.
  CHECK(replay::cpu_replay_bytes_per_rank(two_ops(), {1, 1}) == doctest::Approx(2'253'216).scale(0));
  // At a bytes scale of 0.5 the communicator's buffers halve.
  CHECK(replay::cpu_replay_bytes_per_rank(two_ops(), {1, 0.5}) == doctest::Approx(253'216 + 1'000'000).scale(0));
}

TEST_CASE("a CPU replay that would not fit is refused with scales that fit") {
  // 8 ranks x 2,253,216 bytes = 18 MB against 10 MB available (80% of it usable).
  CHECK_THROWS_AS(replay::check_cpu_replay_fits(two_ops(), {1, 1}, 8, 10e6, "g.json"), UsageError);
  CHECK_NOTHROW(replay::check_cpu_replay_fits(two_ops(), {1, 1}, 8, 30e6, "g.json"));
  CHECK_NOTHROW(replay::check_cpu_replay_fits(two_ops(), {1, 1}, 8, -1, "g.json"));  // unknown: not refused
  try {
    replay::check_cpu_replay_fits(two_ops(), {1, 1}, 8, 10e6, "g.json");
  } catch (const UsageError& e) {
    const std::string what = e.what();
    const auto c = what.find("--compute-scale ");
    const auto b = what.find("--bytes-scale ");
    REQUIRE(c != std::string::npos);
    REQUIRE(b != std::string::npos);
    const double compute = std::stod(what.substr(c + 16));
    const double bytes = std::stod(what.substr(b + 14));
    // The suggested scales do fit.
    CHECK(replay::cpu_replay_bytes_per_rank(two_ops(), {compute, bytes}) * 8 <= 0.8 * 10e6);
  }
}
