#include "cli/pipeline.hpp"

#include "engine/collective.hpp"
#include "engine/collectives/collectives.hpp"
#include "engine/compute_model.hpp"
#include "graph/builder.hpp"
#include "model/transformer_spec.hpp"

namespace shardsim::cli {

engine::collectives::Collectives make_collectives(const config::ScenarioConfig& scenario) {
  engine::collectives::AlgorithmRegistry algorithms;
  engine::collectives::register_builtin_algorithms(algorithms);
  return engine::collectives::Collectives(scenario.collectives, engine::cluster_view(scenario.cluster.topology), std::move(algorithms));
}

Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments) {
  Prepared p;
  p.scenario = config::load_scenario(scenario_file, assignments);
  if (p.scenario.fsdp.cpu_offload && p.scenario.training.grad_accum > 1 && !p.scenario.training.no_sync) {
    // FSDP1 asserts this (fsdp-semantics.md section 5).
    throw ConfigError(p.scenario.fsdp.where, "fsdp.cpu_offload",
                      "gradient accumulation with CPU offload needs training.no_sync: true (PyTorch does not support it otherwise)");
  }
  const auto spec = model::resolve_spec(p.scenario.model);
  const auto& mp = p.scenario.fsdp.mixed_precision;
  const int act_bytes = mp.enabled ? config::dtype_bytes(mp.param) : config::dtype_bytes(p.scenario.training.dtype);
  p.model = model::build_model(spec, p.scenario.training.seq_len, act_bytes);
  fsdp::WrapPolicyRegistry policies;
  fsdp::register_builtin_wrap_policies(policies);
  p.plan = fsdp::make_plan(p.model, p.scenario, policies);
  p.graph = graph::build_step_graph(p.model, p.plan, p.scenario);
  make_collectives(p.scenario).check(p.graph);
  return p;
}

Outcome simulate(const Prepared& p) {
  const auto& topo = p.scenario.cluster.topology;
  const engine::RooflineModel compute(topo, p.plan.param_bytes < 4);
  const engine::collectives::Collectives collectives = make_collectives(p.scenario);
  const engine::SimulationInput input{p.graph,
                                      topo,
                                      static_cast<int>(p.scenario.cluster.nodes),
                                      compute,
                                      collectives,
                                      p.scenario.simulation.flows,
                                      p.scenario.simulation.mode,
                                      p.scenario.stragglers};
  Outcome out{engine::simulate(input), {}};
  out.summary = report::summarize({p.scenario, p.model, p.graph, out.result.timeline, &out.result.waited, &out.result.caused});
  return out;
}

}  // namespace shardsim::cli
