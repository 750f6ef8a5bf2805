// From a scenario file to a step graph: load and check the files, resolve the model, apply FSDP,
// build the graph. Shared by run, export, check and sweep.
#pragma once

#include <filesystem>
#include <span>
#include <string>

#include "config/scenario.hpp"
#include "fsdp/plan.hpp"
#include "graph/step_graph.hpp"
#include "model/transformer.hpp"

namespace shardsim::cli {

struct Prepared {
  config::ScenarioConfig scenario;
  model::Model model;
  fsdp::Plan plan;
  graph::StepGraph graph;
};

// Throws ConfigError for any problem with the input.
[[nodiscard]] Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments);

}  // namespace shardsim::cli
