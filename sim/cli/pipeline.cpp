#include "cli/pipeline.hpp"

#include <fmt/format.h>

#include "engine/collective.hpp"
#include "engine/compute_model.hpp"
#include "graph/builder.hpp"
#include "model/transformer_spec.hpp"

namespace shardsim::cli {

Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments) {
  Prepared p;
  p.scenario = config::load_scenario(scenario_file, assignments);
  engine::check_topology(p.scenario.cluster.topology);
  if (p.scenario.fsdp.cpu_offload) {
    throw ConfigError(p.scenario.fsdp.where, "fsdp.cpu_offload", "CPU offload is not modelled yet; expected false");
  }
  const auto spec = model::resolve_spec(p.scenario.model);
  const auto& mp = p.scenario.fsdp.mixed_precision;
  const int act_bytes = mp.enabled ? config::dtype_bytes(mp.param) : config::dtype_bytes(p.scenario.training.dtype);
  p.model = model::build_model(spec, p.scenario.training.seq_len, act_bytes);
  fsdp::WrapPolicyRegistry policies;
  fsdp::register_builtin_wrap_policies(policies);
  p.plan = fsdp::make_plan(p.model, p.scenario, policies);
  p.graph = graph::build_step_graph(p.model, p.plan, p.scenario);
  return p;
}

Outcome simulate(const Prepared& p) {
  // simulation.max_op_instances: the engine keeps state per op and rank; past the limit it would
  // exhaust memory before the wall-time budget could stop it.
  const auto& limit = p.scenario.simulation.max_op_instances;
  const double instances = static_cast<double>(p.graph.size()) * p.graph.info.world_size;
  if (instances > static_cast<double>(limit.value)) {
    throw ConfigError(limit.where, "simulation.max_op_instances",
                      fmt::format("{} ops on each of {} ranks are {:.0f} op instances to simulate; expected at most {} (raise "
                                  "simulation.max_op_instances, or simulate fewer ranks, layers or steps)",
                                  p.graph.size(), p.graph.info.world_size, instances, limit.value));
  }
  const auto& topo = p.scenario.cluster.topology;
  const engine::RooflineModel compute(topo.gpu, p.plan.param_bytes < 4);
  const engine::RingAlgorithm ring;
  const engine::SimulationInput input{p.graph,
                                      topo,
                                      static_cast<int>(p.scenario.cluster.nodes),
                                      compute,
                                      ring,
                                      p.scenario.simulation.flows,
                                      p.scenario.simulation.max_wall_time.value.value()};
  Outcome out{engine::simulate(input), {}};
  out.summary = report::summarize({p.scenario, p.model, p.graph, out.result.timeline});
  return out;
}

}  // namespace shardsim::cli
