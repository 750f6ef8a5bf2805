#include "engine/scenario_run.hpp"

#include <fmt/format.h>

#include <optional>

#include "engine/calibrated_compute.hpp"
#include "engine/calibrated_ring.hpp"
#include "engine/collective.hpp"
#include "engine/compute_model.hpp"
#include "engine/rank_layout.hpp"
#include "engine/variation.hpp"

namespace shardsim::engine {

collectives::Collectives make_collectives(const config::CollectivesConfig& settings, const config::TopologyConfig& topology) {
  collectives::AlgorithmRegistry algorithms;
  collectives::register_builtin_algorithms(algorithms);
  return collectives::Collectives(settings, cluster_view(topology), std::move(algorithms));
}

collectives::Collectives make_collectives(const config::ScenarioConfig& scenario) {
  return make_collectives(scenario.collectives, scenario.cluster.topology);
}

void check(const graph::Prepared& p) {
  const auto& s = p.scenario;
  check_topology(s.cluster.topology);
  make_collectives(s).check(p.graph);
  if (s.simulation.mode == config::SimulationMode::symmetric) {
    const std::string shared = link_shared_between_instances(p.graph, s.cluster.topology, static_cast<int>(s.cluster.nodes));
    if (!shared.empty()) {
      // On D2's job with hybrid sharding (p4de nodes, 4 NICs for 8 GPUs) its step came out 4 % short,
      // 2-3 % with hybrid sharding on 2:1 uplinks.
      throw ConfigError(s.simulation.mode_where, "simulation.mode",
                        fmt::format("symmetric simulates rank 0's collectives as if no other group used its links, but here {}, "
                                    "whose collectives contend there; expected full or auto",
                                    shared));
    }
  }
}

std::unique_ptr<ComputeModel> make_compute_model(const graph::Prepared& p) {
  const auto& topo = p.scenario.cluster.topology;
  const auto nominal = ComputeRates::nominal(topo, p.plan.param_bytes < 4, p.scenario.training.attention.value);
  ComputeModelRegistry compute_models;
  register_builtin_compute_models(compute_models);
  const auto& cal = p.scenario.calibration;
  return compute_models.get(topo.gpu.compute_model).create(cal ? calibrated_rates(nominal, *cal) : nominal);
}

SimulationResult simulate(const graph::Prepared& p, const Deadline& deadline, bool cohorts, bool fold) {
  const auto& scenario = p.scenario;
  const auto& graph = p.graph;
  const auto& topo = scenario.cluster.topology;
  const collectives::Collectives nccl = make_collectives(scenario);
  // A calibration file (scenario key `calibration`) replaces the topology's nominal rates. Its
  // measured collective costs are those of NCCL's ring: with them every collective runs as the
  // ring with the Simple protocol, priced by the calibration (collectives.algorithm does not apply).
  const auto& cal = scenario.calibration;
  const auto compute = make_compute_model(p);
  std::optional<collectives::Collectives> ring;
  std::optional<CalibratedRing> calibrated_ring;
  if (cal && cal->has_collectives()) {
    config::CollectivesConfig ring_simple = scenario.collectives;
    ring_simple.all_gather.name = ring_simple.reduce_scatter.name = ring_simple.all_reduce.name = "ring";
    ring_simple.protocol.name = "simple";
    ring.emplace(make_collectives(ring_simple, topo));
    calibrated_ring.emplace(*ring, *cal);
  }
  const CollectiveAlgorithm& collective = calibrated_ring ? static_cast<const CollectiveAlgorithm&>(*calibrated_ring) : nccl;
  SimulationInput input{graph,
                        topo,
                        static_cast<int>(scenario.cluster.nodes),
                        *compute,
                        collective,
                        scenario.simulation.flows,
                        scenario.simulation.mode,
                        scenario.stragglers,
                        deadline,
                        scenario.cluster.jobs,
                        scenario.cluster.placement};
  input.cohorts = cohorts;
  input.pace = fleet_pace(scenario);
  input.fold = fold;
  // simulation.max_op_instances: the engine keeps state per op and cohort of alike ranks, and
  // ranks can all come to differ (jitter, stragglers, contention); past the limit that could
  // exhaust memory before the wall-time budget could stop it.
  const auto& limit = scenario.simulation.max_op_instances;
  const std::int64_t ranks = std::int64_t{representatives(input)} * (symmetric_mode(input) ? 1 : scenario.cluster.jobs);
  const double instances = static_cast<double>(graph.size()) * static_cast<double>(ranks);
  if (instances > static_cast<double>(limit.value)) {
    throw ConfigError(limit.where, "simulation.max_op_instances",
                      fmt::format("{} ops on each of {} ranks are {:.0f} op instances to simulate; expected at most {} (raise "
                                  "simulation.max_op_instances, or simulate fewer ranks, layers or steps)",
                                  graph.size(), ranks, instances, limit.value));
  }
  SimulationResult result = simulate(input);
  result.communicators = (ring ? *ring : nccl).communicators(graph);
  return result;
}

}  // namespace shardsim::engine
