#include "cli/pipeline.hpp"

#include "engine/scenario_run.hpp"

namespace shardsim::cli {

Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments) {
  config::ScenarioConfig scenario = config::load_scenario(scenario_file, assignments);
  // The topology first: a fabric kind the engine does not know is reported before the model.
  engine::check_topology(scenario.cluster.topology);
  Prepared p = graph::prepare(std::move(scenario));
  engine::check(p);
  return p;
}

Outcome simulate(const Prepared& p) {
  Outcome out{engine::simulate(p), {}};
  out.summary = report::summarize(
      {p.scenario, p.model, p.graph, out.result.timeline, &out.result.waited, &out.result.caused, &out.result.job_ends});
  return out;
}

}  // namespace shardsim::cli
