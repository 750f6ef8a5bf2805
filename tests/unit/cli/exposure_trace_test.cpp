// The Perfetto trace's "compute waits for" track (report/exposure.hpp): each stretch of exposed
// communication, named by the collective the compute stream waited for.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/pipeline.hpp"
#include "report/outputs.hpp"
#include "test_support.hpp"

using namespace shardsim;

TEST_CASE("the trace's waits track names what compute waited for and adds up to the exposed communication") {
  // The tiny Llama with TP 2: vanilla TP collectives between the block's compute segments, so
  // the compute stream waits for each. One step: the summary's exposed communication is rank 0's
  // over the step, the waits track's slices on rank 0 cover the same time.
  const auto p = cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", std::vector<std::string>{"parallelism.tp=2"});
  const auto out = cli::simulate(p);
  REQUIRE(out.summary.exposed_rank == 0);
  const auto trace = nlohmann::json::parse(report::chrome_trace(p.graph, out.result.timeline, 1));
  const int waits_tid = static_cast<int>(graph::kStreams);
  double waited = 0;
  double tp = 0;
  int named = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 0 || e["tid"] != waits_tid) continue;
    const std::string name = e["name"];
    const double dur = e["dur"];
    waited += dur;
    if (e["args"]["dimension"] == "tp") tp += dur;
    if (name.starts_with("waits for TP ")) {
      ++named;
      CHECK(e["args"]["dimension"] == "tp");
      CHECK(e["args"]["op"] >= 0);
    }
  }
  CHECK(named > 0);
  CHECK(waited * 1e-6 == doctest::Approx(out.summary.exposed_comm_s).epsilon(1e-9).scale(0));
  CHECK(tp * 1e-6 == doctest::Approx(out.summary.tp_exposed_comm_s).epsilon(1e-9).scale(0));
}

TEST_CASE("the trace's memory counters follow the summary's rank and reach its allocated and reserved peaks") {
  // The tiny Llama with fully_shard: the counters are the summary's memory timeline, point for
  // point, in GiB; their highs are the summary's peaks, and the categories add up to allocated.
  const auto p = cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", std::vector<std::string>{"fsdp.version=2"});
  const auto out = cli::simulate(p);
  const auto& m = out.summary.memory;
  const auto trace = nlohmann::json::parse(report::chrome_trace(p.graph, out.result.timeline, 1, {}, &m));
  constexpr double GiB = 1024.0 * 1024 * 1024;
  double allocated = 0, reserved = 0;
  double last = -1;  // the allocated figure of the point the categories come after
  std::size_t points = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "C" || e["pid"] != m.rank) continue;
    if (e["name"] == "memory (GiB)") {
      ++points;
      last = e["args"]["allocated"].get<double>();
      allocated = std::max(allocated, last);
      reserved = std::max(reserved, e["args"]["reserved"].get<double>());
    } else {
      double sum = 0;
      for (const auto& [category, gib] : e["args"].items()) sum += gib.get<double>();
      CHECK(sum == doctest::Approx(last).epsilon(1e-9).scale(1e-12));
    }
  }
  CHECK(points == m.points.size());
  CHECK(allocated * GiB == doctest::Approx(m.peak).epsilon(1e-9).scale(0));
  CHECK(reserved * GiB == doctest::Approx(m.peak_reserved).epsilon(1e-9).scale(0));
}
