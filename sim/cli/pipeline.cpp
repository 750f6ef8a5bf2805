#include "cli/pipeline.hpp"

#include "engine/scenario_run.hpp"

namespace shardsim::cli {

Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments, Deadline::Clock::time_point started) {
  config::ScenarioConfig scenario = config::load_scenario(scenario_file, assignments);
  // The topology first: a fabric kind the engine does not know is reported before the model.
  engine::check_topology(scenario.cluster.topology);
  const Deadline deadline(started, scenario.simulation.max_wall_time.value.value());
  Prepared p = graph::prepare(std::move(scenario), deadline);
  engine::check(p);
  return p;
}

Outcome simulate(const Prepared& p, Deadline::Clock::time_point started) {
  const Deadline deadline(started, p.scenario.simulation.max_wall_time.value.value());
  Outcome out{engine::simulate(p, deadline), {}};
  out.summary = report::summarize(
      {p.scenario, p.model, p.graph, out.result.timeline, &out.result.waiting, &out.result.holding, &out.result.job_ends, &deadline});
  return out;
}

}  // namespace shardsim::cli
