// The shipped several-jobs scenario says what it shows: four 16-GPU jobs on leaves of four nodes
// with 2:1 uplinks. Packed, each job stays under half a leaf; interleaved, all of each job's
// traffic between its two nodes crosses the uplinks, where the four jobs offer 4 x 380 GB/s
// (8 NICs x 47.5 GB/s) to 4 x 8 x 47.5 / 2 = 760 GB/s: half the NICs' rate each, so the
// inter-node part of every collective takes twice as long (worked in jobs_test.cpp for one
// all-gather). NVLink steps and latencies are unchanged, so communication grows by a little
// less than 2x.
#include <doctest/doctest.h>

#include "system_support.hpp"

using namespace shardsim::test;

namespace {

nlohmann::json run_json(const std::string& placement) {
  const auto dir = scratch_dir("jobs-" + placement);
  const auto r =
      run_shardsim({"run", "scenarios/llama3.1-8b_4jobs_shared_leaves.yaml", "--set", "cluster.placement=" + placement, "--json"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("scenario llama3.1-8b_4jobs_shared_leaves: interleaved jobs share the leaf uplinks, packed jobs do not") {
  const auto packed = run_json("packed");
  const auto interleaved = run_json("interleaved");
  const double ratio = interleaved["comm_s"].get<double>() / packed["comm_s"].get<double>();
  MESSAGE("communication per step: packed ", packed["comm_s"].get<double>(), " s, interleaved ", interleaved["comm_s"].get<double>(), " s");
  CHECK(ratio > 1.8);
  CHECK(ratio < 2.0);
  CHECK(interleaved["step_time_s"].get<double>() > packed["step_time_s"].get<double>());
  // Identical jobs on a symmetric layout end together.
  for (const auto& end : interleaved["job_ends_s"])
    CHECK(end.get<double>() == doctest::Approx(interleaved["step_time_s"].get<double>()).scale(0));
  CHECK(interleaved["job_ends_s"].size() == 4);
}

TEST_CASE("scenario llama3.1-8b_4jobs_shared_leaves: the summary says whose figures it shows and when the jobs end") {
  const auto dir = scratch_dir("jobs-summary");
  const auto r = run_shardsim({"run", "scenarios/llama3.1-8b_4jobs_shared_leaves.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("16 GPUs (2 nodes x 8 H100-SXM per job, 4 jobs)") != std::string::npos);
  // Identical jobs on a symmetric layout end together: one time, not a range.
  CHECK(r.out.find("4 jobs share the fabric (interleaved placement): the figures are job 0's; every job's run ends at ") !=
        std::string::npos);
}
