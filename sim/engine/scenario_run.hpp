// A scenario's simulation as the engine sets it up: its collectives (NCCL's algorithms picked as
// NCCL's tuner does unless forced, or a calibration's measured ring), its compute model (the
// topology's rates or a calibration's), its limits. `simulate(SimulationInput)` is the scheduler;
// this is what a scenario file asks of it.
//
//   const graph::Prepared p = graph::prepare(scenario);
//   engine::check(p);                                // ConfigError before any run
//   const auto result = engine::simulate(p);
#pragma once

#include <memory>

#include "config/scenario.hpp"
#include "engine/collectives/collectives.hpp"
#include "engine/compute_model.hpp"
#include "engine/simulator.hpp"
#include "graph/prepare.hpp"

namespace shardsim::engine {

// The scenario's collectives (collectives: algorithm / protocol) on its topology. Throws
// ConfigError for an unknown algorithm or an impossible forced protocol.
[[nodiscard]] collectives::Collectives make_collectives(const config::ScenarioConfig& scenario);
[[nodiscard]] collectives::Collectives make_collectives(const config::CollectivesConfig& settings, const config::TopologyConfig& topology);

// The compute model the scenario's run prices compute with: the topology's (gpu.compute_model)
// over its nominal rates, or over a calibration's where the scenario names one.
[[nodiscard]] std::unique_ptr<ComputeModel> make_compute_model(const graph::Prepared& p);

// What the engine checks before running: the topology (fabric kind) and that forced collective
// algorithms can run the graph's collectives. Throws ConfigError.
void check(const graph::Prepared& p);

// Simulates the prepared graph on its scenario's cluster. Throws ConfigError when the run would pass
// simulation.max_op_instances, RuntimeError when it stalls or passes `deadline` (the scenario's
// simulation.max_wall_time from when the command started). Creates the process's one SimGrid engine.
// `cohorts`, `fold`: SimulationInput's (false only in tests that compare the two ways).
[[nodiscard]] SimulationResult simulate(const graph::Prepared& p, const Deadline& deadline = {}, bool cohorts = true, bool fold = true);

}  // namespace shardsim::engine
