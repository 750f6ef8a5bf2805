// FSDP's hooks on the CPU (host.fsdp2_hook_per_tensor) in the Perfetto trace: the CPU thread's
// track shows each hook where the CPU issue model runs it, before the op it issues.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/pipeline.hpp"
#include "report/outputs.hpp"
#include "test_support.hpp"

using namespace shardsim;

TEST_CASE("the Perfetto trace shows FSDP's hooks on the CPU thread, each before the op it issues") {
  const auto p = cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", std::vector<std::string>{"fsdp.version=2"});
  const auto out = cli::simulate(p);
  const auto trace = nlohmann::json::parse(report::chrome_trace(p.graph, out.result.timeline, 1));
  const int cpu_tid = static_cast<int>(graph::Stream::cpu);
  std::map<int, std::pair<double, double>> hooks;  // op id -> its hook's start and end (us)
  std::map<int, double> starts;                    // op id -> its start on the GPU (us)
  std::map<std::string, int> named;                // hooks by the op's name
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 0) continue;
    const std::string name = e["name"];
    const int op = e["args"]["op"];
    const double ts = e["ts"];
    const double dur = e["dur"];
    if (e["tid"] == cpu_tid && name.starts_with("hooks ")) {
      hooks[op] = {ts, ts + dur};
      ++named[name.substr(6)];
      // a block's 9 parameters at 41 us
      if (name.starts_with("hooks AG layers.") || name.starts_with("hooks copy-in layers.")) CHECK(dur == doctest::Approx(369).scale(0));
    } else {
      starts[op] = ts;
    }
  }
  // fully_shard's hooks: each block's all-gathers in forward and backward and its copy-in.
  CHECK(named["AG layers.1"] == 2);
  CHECK(named["copy-in layers.1"] == 1);
  for (const auto& [op, span] : hooks) {
    CAPTURE(op);
    REQUIRE(starts.count(op) == 1);
    CHECK(span.second <= starts[op] + 1e-6);  // the GPU starts no op before its hook has run
  }
  // The summary's CPU in FSDP's hooks: the root's all-gather and copy-in (3 parameters, 123 us
  // each) and each block's two all-gathers and copy-in (369 us each).
  CHECK(out.summary.hooks_cpu_s * 1e6 == doctest::Approx(2 * 123 + 4 * 3 * 369).scale(0));
  // One CPU thread: its hooks never overlap.
  std::vector<std::pair<double, double>> spans;
  for (const auto& [name, span] : hooks) spans.push_back(span);
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].first >= spans[i - 1].second - 1e-6);
}
