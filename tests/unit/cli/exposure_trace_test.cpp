// The Perfetto trace's "compute waits for" track (report/exposure.hpp): each stretch of exposed
// communication, named by the collective the compute stream waited for.
#include <doctest/doctest.h>

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
