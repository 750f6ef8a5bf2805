#include "cli/pipeline.hpp"

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "engine/calibrated_compute.hpp"
#include "engine/calibrated_ring.hpp"
#include "engine/collective.hpp"
#include "engine/collectives/collectives.hpp"
#include "engine/compute_model.hpp"
#include "graph/builder.hpp"
#include "model/transformer_spec.hpp"

namespace shardsim::cli {

engine::collectives::Collectives make_collectives(const config::CollectivesConfig& settings, const config::TopologyConfig& topology) {
  engine::collectives::AlgorithmRegistry algorithms;
  engine::collectives::register_builtin_algorithms(algorithms);
  return engine::collectives::Collectives(settings, engine::cluster_view(topology), std::move(algorithms));
}

engine::collectives::Collectives make_collectives(const config::ScenarioConfig& scenario) {
  return make_collectives(scenario.collectives, scenario.cluster.topology);
}

Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments) {
  Prepared p;
  p.scenario = config::load_scenario(scenario_file, assignments);
  engine::check_topology(p.scenario.cluster.topology);
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
  const bool low_precision = p.plan.param_bytes < 4;
  const engine::collectives::Collectives collectives = make_collectives(p.scenario);
  // A calibration file (scenario key `calibration`) replaces the topology's nominal rates. Its
  // measured collective costs are those of NCCL's ring: with them every collective runs as the
  // ring with the Simple protocol, priced by the calibration (collectives.algorithm does not apply).
  const auto& cal = p.scenario.calibration;
  const auto nominal = engine::ComputeRates::nominal(topo, low_precision);
  const engine::RooflineModel compute(cal ? engine::calibrated_rates(nominal, *cal) : nominal);
  std::optional<engine::collectives::Collectives> ring;
  std::optional<engine::CalibratedRing> calibrated_ring;
  if (cal && cal->has_collectives()) {
    config::CollectivesConfig ring_simple = p.scenario.collectives;
    ring_simple.all_gather.name = ring_simple.reduce_scatter.name = ring_simple.all_reduce.name = "ring";
    ring_simple.protocol.name = "simple";
    ring.emplace(make_collectives(ring_simple, topo));
    calibrated_ring.emplace(*ring, *cal);
  }
  const engine::CollectiveAlgorithm& collective =
      calibrated_ring ? static_cast<const engine::CollectiveAlgorithm&>(*calibrated_ring) : collectives;
  const engine::SimulationInput input{p.graph,
                                      topo,
                                      static_cast<int>(p.scenario.cluster.nodes),
                                      compute,
                                      collective,
                                      p.scenario.simulation.flows,
                                      p.scenario.simulation.mode,
                                      p.scenario.stragglers,
                                      p.scenario.simulation.max_wall_time.value.value(),
                                      p.scenario.cluster.jobs,
                                      p.scenario.cluster.placement};
  // simulation.max_op_instances: the engine keeps state per op and rank; past the limit it would
  // exhaust memory before the wall-time budget could stop it.
  const auto& limit = p.scenario.simulation.max_op_instances;
  const std::int64_t ranks = engine::symmetric_mode(input) ? 1 : std::int64_t{p.graph.info.world_size} * p.scenario.cluster.jobs;
  const double instances = static_cast<double>(p.graph.size()) * ranks;
  if (instances > static_cast<double>(limit.value)) {
    throw ConfigError(limit.where, "simulation.max_op_instances",
                      fmt::format("{} ops on each of {} ranks are {:.0f} op instances to simulate; expected at most {} (raise "
                                  "simulation.max_op_instances, or simulate fewer ranks, layers or steps)",
                                  p.graph.size(), ranks, instances, limit.value));
  }
  Outcome out{engine::simulate(input), {}};
  out.summary = report::summarize(
      {p.scenario, p.model, p.graph, out.result.timeline, &out.result.waited, &out.result.caused, &out.result.job_ends});
  return out;
}

}  // namespace shardsim::cli
