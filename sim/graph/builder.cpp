#include "graph/builder.hpp"

#include "config/sections.hpp"
#include "graph/step_builder.hpp"
#include "graph/zero3_builder.hpp"

namespace shardsim::graph {

int steps_to_simulate(const config::ScenarioConfig& s) {
  if (s.simulation.steps > 0) return s.simulation.steps;
  // The first step differs where behaviour is recorded during it: FSDP1's forward-prefetch order
  // and DeepSpeed's parameter trace.
  const bool fsdp1_forward_prefetch = s.fsdp.version == 1 && s.fsdp.forward_prefetch > 0 && config::forward_prefetch_applies(s);
  return (fsdp1_forward_prefetch || s.fsdp.sharding == config::Sharding::zero3) ? 2 : 1;
}

void register_builtin_step_builders(StepBuilderRegistry& registry) {
  auto fsdp = [](const model::Model&, const fsdp::Plan& plan, const config::ScenarioConfig& s, int steps, const Deadline& deadline) {
    StepGraph g;
    FsdpStepBuilder builder(plan, s, steps, g);
    builder.set_deadline(deadline);
    builder.build();
    return g;
  };
  registry.add({"fsdp1", "PyTorch FullyShardedDataParallel: flat parameters, one NCCL stream, the CPU rate limiter", fsdp});
  registry.add({"fsdp2", "PyTorch fully_shard: per-parameter sharding, all-gather and reduce-scatter streams, copy-in/out", fsdp});
  registry.add({"zero3", "DeepSpeed ZeRO stage 3: parameter fetches by trace, prefetch buckets, reduce buckets", build_zero3_graph});
}

std::string_view step_builder_name(const config::ScenarioConfig& s) {
  if (s.fsdp.sharding == config::Sharding::zero3) return "zero3";
  return s.fsdp.version == 1 ? "fsdp1" : "fsdp2";
}

StepGraph build_step_graph(const model::Model& model, const fsdp::Plan& plan, const config::ScenarioConfig& scenario,
                           const Deadline& deadline) {
  StepBuilderRegistry builders;
  register_builtin_step_builders(builders);
  const StepBuilderInfo& builder = builders.get(step_builder_name(scenario), scenario.fsdp.where, "fsdp.version");
  return builder.build(model, plan, scenario, steps_to_simulate(scenario), deadline);
}

}  // namespace shardsim::graph
