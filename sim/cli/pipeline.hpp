// From a scenario file to a step graph: load and check the files, resolve the model, apply FSDP,
// build the graph. Shared by run, export, check and sweep.
#pragma once

#include <filesystem>
#include <span>
#include <string>

#include "config/scenario.hpp"
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

// Throws ConfigError for any problem with the input.
[[nodiscard]] Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments);

struct Outcome {
  engine::SimulationResult result;
  report::Summary summary;
};

// Simulates a prepared scenario with its topology's compute model and NCCL's ring, and
// summarises it. Creates the process's one SimGrid engine.
[[nodiscard]] Outcome simulate(const Prepared& p);

}  // namespace shardsim::cli
