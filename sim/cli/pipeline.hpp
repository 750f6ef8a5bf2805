// From a scenario file to a step graph: load and check the files, resolve the model, apply FSDP,
// build the graph. Shared by run, export, check and sweep.
#pragma once

#include <filesystem>
#include <span>
#include <string>

#include "config/scenario.hpp"
#include "engine/collectives/collectives.hpp"
#include "engine/simulator.hpp"
#include "fsdp/plan.hpp"
#include "graph/step_graph.hpp"
#include "model/transformer.hpp"
#include "report/metrics.hpp"

namespace shardsim::cli {

struct Prepared {
  config::ScenarioConfig scenario;
  model::Model model;
  fsdp::Plan plan;
  graph::StepGraph graph;
};

// The scenario's collectives (collectives: algorithm / protocol) on its topology. Throws
// ConfigError for an unknown algorithm or an impossible forced protocol.
[[nodiscard]] engine::collectives::Collectives make_collectives(const config::ScenarioConfig& scenario);
[[nodiscard]] engine::collectives::Collectives make_collectives(const config::CollectivesConfig& settings,
                                                                const config::TopologyConfig& topology);

// Throws ConfigError for any problem with the input, including forced collective algorithms
// that cannot run the graph's collectives.
[[nodiscard]] Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments);

struct Outcome {
  engine::SimulationResult result;
  report::Summary summary;
};

// Simulates a prepared scenario with its topology's compute model and its collectives (NCCL's
// algorithms, picked as NCCL's tuner does unless forced), and summarises it. Creates the process's one SimGrid engine.
[[nodiscard]] Outcome simulate(const Prepared& p);

}  // namespace shardsim::cli
