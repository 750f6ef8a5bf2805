#include "graph/builder.hpp"

#include "graph/step_builder.hpp"
#include "graph/zero3_builder.hpp"

namespace shardsim::graph {

int steps_to_simulate(const config::ScenarioConfig& s) {
  if (s.simulation.steps > 0) return s.simulation.steps;
  // The first step differs where behaviour is recorded during it: FSDP1's forward-prefetch order
  // and DeepSpeed's parameter trace.
  const bool fsdp1_forward_prefetch = s.fsdp.version == 1 && s.fsdp.forward_prefetch > 0;
  return (fsdp1_forward_prefetch || s.fsdp.sharding == config::Sharding::zero3) ? 2 : 1;
}

StepGraph build_step_graph(const model::Model& model, const fsdp::Plan& plan, const config::ScenarioConfig& scenario) {
  if (scenario.fsdp.sharding == config::Sharding::zero3) return build_zero3_graph(model, plan, scenario, steps_to_simulate(scenario));
  return FsdpStepBuilder(plan, scenario, steps_to_simulate(scenario)).build();
}

}  // namespace shardsim::graph
