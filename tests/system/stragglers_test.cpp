// What stragglers cost: the summary's step time without them is the step time of the same run
// with every rank alike, simulated separately here; every wait figure is a length of time within
// the step, at most the step itself (they once summed concurrent waits to 142 s in a 3.2 s step).
#include <doctest/doctest.h>

#include "system_support.hpp"

using namespace shardsim::test;

TEST_CASE("a slow GPU's cost is the step time against the same run without it, and waits fit in the step") {
  const auto dir = scratch_dir("stragglers");
  const std::vector<std::string> base{"run",   "tests/data/tiny_llama.yaml", "--set", "cluster.nodes=4",
                                      "--set", "simulation.mode=full",       "--json"};
  auto with = base;
  with.insert(with.end(), {"--set", "stragglers.slow_gpus=[{rank: 5, factor: 1.5}]"});
  const ProcessResult alike = run_shardsim(base, dir);
  const ProcessResult slow = run_shardsim(with, dir);
  REQUIRE(alike.exit_code == 0);
  REQUIRE(slow.exit_code == 0);
  const auto a = nlohmann::json::parse(alike.out);
  const auto s = nlohmann::json::parse(slow.out);
  const double step = s["step_time_s"].get<double>();
  CHECK(s["step_time_without_stragglers_s"].get<double>() == doctest::Approx(a["step_time_s"].get<double>()).epsilon(1e-9).scale(0));
  CHECK(step > a["step_time_s"].get<double>());
  REQUIRE(!s["waits"].empty());
  CHECK(s["waits"][0]["rank"] == 5);
  for (const auto& w : s["waits"]) {
    for (const char* key : {"caused_s", "waited_s", "others_waited_mean_s", "others_waited_max_s"}) {
      INFO(key);
      CHECK(w[key].get<double>() >= 0);
      CHECK(w[key].get<double>() <= step);
    }
  }
  CHECK(a["step_time_without_stragglers_s"].is_null());
}
