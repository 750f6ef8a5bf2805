// nccl-tests logs read as they are printed, and the size-aware fit of their curves. The small
// logs here are written in nccl-tests' layout with times chosen by hand; the real logs come from
// ../shared/real-data (skipped when absent).
#include "validate/nccl_tests.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "real_data.hpp"
#include "test_support.hpp"
#include "validate/calibrate.hpp"

using namespace shardsim;

namespace {

// all_reduce_perf over 8 GPUs of one host: algbw = S / t, busbw = algbw x 2 x 7/8 = 1.75 algbw.
constexpr const char* kHeadered =
    R"(# nThread 1 nGpus 8 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  4242 on      gpu01 device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid  4242 on      gpu01 device  7 [0xc1] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    21.00   49.93   87.38      0
     2097152        524288     float     sum      -1    30.00   69.91  122.34      0    30.00   69.91  122.34      0
     4194304       1048576     float     sum      -1    50.00   83.89  146.80      0    50.00   83.89  146.80      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 119.5
)";

// The same run as srun --label prints it, without a header: 16 ranks follow from busbw / algbw
// = 2 x 15/16 = 1.875; nodes must be given.
constexpr const char* kLabelled =
    R"( 0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
 0:      1048576        262144     float     sum      -1    40.00   26.21   49.15    N/A    40.00   26.21   49.15    N/A
 0:      2097152        524288     float     sum      -1    60.00   34.95   65.54    N/A    60.00   34.95   65.54    N/A
 0:      4194304       1048576     float     sum      -1   100.00   41.94   78.64    N/A   100.00   41.94   78.64    N/A
)";

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

validate::BenchResults bench_of(const validate::NcclTestsLog& log) {
  validate::BenchResults b;
  const auto link = log.nodes == 1 ? config::LinkClass::nvlink : config::LinkClass::nic;
  for (const auto& r : log.rows) {
    b.collectives.push_back({graph::OpKind::all_reduce, link, log.ranks, log.ranks / log.nodes, r.bytes, r.time_oop});
    b.collectives.push_back({graph::OpKind::all_reduce, link, log.ranks, log.ranks / log.nodes, r.bytes, r.time_ip});
  }
  return b;
}

}  // namespace

TEST_CASE("an nccl-tests log with its header: collective from the file name, ranks and nodes from the Rank lines") {
  const auto log = validate::parse_nccl_tests(kHeadered, "runs/all_reduce_perf_8gpu.txt", {});
  CHECK(log.collective == validate::ActivityClass::all_reduce);
  CHECK(log.collective_from == "the file name");
  CHECK(log.ranks == 8);  // ranks 0..7 listed (nccl-tests users often trim the middle ones)
  CHECK(log.nodes == 1);
  CHECK(log.device == "NVIDIA H100 80GB HBM3");
  REQUIRE(log.rows.size() == 3);
  CHECK(log.rows[0].bytes == 1048576.0);
  CHECK(log.rows[0].time_oop == doctest::Approx(20e-6).scale(0));
  CHECK(log.rows[0].time_ip == doctest::Approx(21e-6).scale(0));
  CHECK(log.rows[0].line == 10);
  // --nodes is for logs without a header: beside this one it is not used, and that is said.
  validate::NcclTestsHints hints;
  hints.nodes = 2;
  const auto again = validate::parse_nccl_tests(kHeadered, "runs/all_reduce_perf_8gpu.txt", hints);
  CHECK(again.nodes == 1);
  CHECK(again.notes == std::vector<std::string>{"--nodes 2 not used: the header shows 1 host"});
}

TEST_CASE("srun's '0: ' prefix and no header: ranks from busbw / algbw, nodes from --nodes") {
  validate::NcclTestsHints hints;
  CHECK(
      message_of([&] { (void)validate::parse_nccl_tests(kLabelled, "all_reduce_2x8.log", hints); }) ==
      "all_reduce_2x8.log: error: cannot tell how many nodes the 16 ranks were on: the log has no \"#  Rank ... on HOST\" lines; expected "
      "--nodes N");
  hints.nodes = 2;
  const auto log = validate::parse_nccl_tests(kLabelled, "all_reduce_2x8.log", hints);
  CHECK(log.ranks == 16);
  CHECK(log.ranks_from == "busbw / algbw");
  CHECK(log.rows.size() == 3);
  // --ranks that contradicts busbw / algbw is caught on the first row (line 2).
  hints.ranks = 8;
  CHECK(
      message_of([&] {
        (void)validate::parse_nccl_tests(kLabelled, "all_reduce_2x8.log", hints);
      }).rfind("all_reduce_2x8.log:2:10: error: busbw / algbw = 1.8752, not nccl-tests' factor for all_reduce over 8 ranks (1.7500)", 0) ==
      0);
}

TEST_CASE("rows that do not add up, and text that is not nccl-tests output, are refused") {
  std::string shifted = kHeadered;
  // algbw 52.43 replaced by 5.43: size / time no longer matches.
  shifted.replace(shifted.find("52.43"), 5, " 5.43");
  CHECK(message_of([&] {
          (void)validate::parse_nccl_tests(shifted, "all_reduce.log", {});
        }).rfind("all_reduce.log:10:66: error: algbw 5.43 GB/s but size / time = 52.43 GB/s;", 0) == 0);
  CHECK_FALSE(validate::looks_like_nccl_tests("Epoch 1: loss 2.31\nEpoch 2: loss 1.97\n"));
  CHECK(validate::looks_like_nccl_tests(kLabelled));
  // An all-gather log whose rows reduce.
  CHECK(message_of([&] {
          (void)validate::parse_nccl_tests(kHeadered, "all_gather.log", {});
        }).rfind("all_gather.log:10:6: error: redop \"sum\" in a log of all_gather (by the file name); expected none", 0) == 0);
  // No collective in the name or the log.
  CHECK(message_of([&] {
          (void)validate::parse_nccl_tests(kHeadered, "bench.log", {});
        }).rfind("bench.log: error: cannot tell which collective was measured", 0) == 0);
}

TEST_CASE("an older all_gather log without redop and root columns, over two hosts") {
  // all_gather: busbw = algbw x 15/16 over 16 ranks; count is per rank (S / 4 / 16).
  const std::string text = R"(#  Rank  0 Group  0 Pid  1 on  nodeA device  0 [0x18] NVIDIA A100-SXM4-80GB
#  Rank 15 Group  0 Pid  2 on  nodeB device  7 [0xc1] NVIDIA A100-SXM4-80GB
#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error
    16777216        262144     float    800.0   20.97   19.66  0e+00    800.0   20.97   19.66  0e+00
    33554432        524288     float   1200.0   27.96   26.21  0e+00   1200.0   27.96   26.21  0e+00
    67108864       1048576     float   2000.0   33.55   31.46  0e+00   2000.0   33.55   31.46  0e+00
)";
  const auto log = validate::parse_nccl_tests(text, "all_gather_perf.out", {});
  CHECK(log.collective == validate::ActivityClass::all_gather);
  CHECK(log.ranks == 16);
  CHECK(log.nodes == 2);
  CHECK(log.rows[2].time_oop == doctest::Approx(2000e-6).scale(0));
}

TEST_CASE("a collective fit with fewer than 3 sizes is refused, --min-bytes counts") {
  const auto log = validate::parse_nccl_tests(kHeadered, "all_reduce.log", {});
  validate::FitOptions o;
  o.min_bytes = 2097152;  // leaves 2 MiB and 4 MiB
  CHECK(message_of([&] { (void)validate::fit_calibration(bench_of(log), o); }) ==
        "calibrate: all_reduce over nvlink: 2 sizes measured (2 MiB, 4 MiB); a latency and a bandwidth need at least 3 sizes, to be "
        "fitted and checked (measure more sizes, or widen --min-bytes / --max-bytes)");
  // All three: t = a + 1.75 S / B through (1 MiB, 20.5 us mean), (2 MiB, 30), (4 MiB, 50) fits
  // within a few percent with one piece from 1 MiB.
  const auto fit = validate::fit_calibration(bench_of(log));
  const auto& e = fit.calibration.collectives[0][2];
  REQUIRE(e);
  REQUIRE(e->sizes.size() == 1);
  CHECK(e->sizes[0].from_bytes == 1048576.0);
  CHECK_FALSE(e->at(1048575.0).has_value());  // below the sizes measured: the topology's model
}

TEST_CASE("real nccl-tests: the 2 x 8 H100 ring log is 16 ranks, and its large sizes run at the busbw it prints") {
  const auto file = test::real_data("nccl-tests_all_reduce_ring_2x8_h100.log");
  if (file.empty()) return;
  validate::NcclTestsHints hints;
  hints.nodes = 2;
  const auto log = validate::parse_nccl_tests(read(file), file.string(), hints);
  CHECK(log.ranks == 16);  // busbw / algbw = 38.60 / 20.59 = 1.875 = 2 x 15/16
  CHECK(log.rows.size() == 11);
  CHECK(log.rows.front().bytes == 8388608.0);
  CHECK(log.rows.back().bytes == 8589934592.0);
  const auto fit = validate::fit_calibration(bench_of(log));
  const auto& e = fit.calibration.collectives[1][2];
  REQUIRE(e);
  // From 512 MiB up the log prints busbw 87.07 .. 89.90 GB/s; the piece pricing 1 GiB must lie there.
  const auto piece = e->at(1073741824.0);
  REQUIRE(piece);
  CHECK(piece->bus_bandwidth >= 87.0e9);
  CHECK(piece->bus_bandwidth <= 90.0e9);
  // Every size within 10 % of both its times (the engine test runs the same through the simulator).
  for (const auto& r : fit.sizes) {
    CAPTURE(r.bytes);
    CHECK(std::fabs(r.worst) <= 0.10);
  }
}

TEST_CASE("real nccl-tests: the 1 x 8 H100 NVLS log states 8 ranks on one node, fitted within 10 % at every size") {
  const auto file = test::real_data("nccl-tests_all_reduce_1x8_h100_nvls.log");
  if (file.empty()) return;
  const auto log = validate::parse_nccl_tests(read(file), file.string(), {});
  CHECK(log.ranks == 8);
  CHECK(log.nodes == 1);
  CHECK(log.rows.size() == 6);
  const auto fit = validate::fit_calibration(bench_of(log));
  REQUIRE(fit.sizes.size() == 6);
  for (const auto& r : fit.sizes) CHECK(std::fabs(r.worst) <= 0.10);
  // Its smallest size is 128 MiB: smaller collectives are left to the topology, said so.
  REQUIRE_FALSE(fit.notes.empty());
  CHECK(fit.notes.front() == "all_reduce over nvlink: sizes below 128 MiB were not measured; the topology's model prices them");
}
