// From a scenario file to a summary: load and check the files (config), prepare the step graph
// (graph::prepare), check and simulate it (engine), summarise (report). Shared by run, export,
// check and sweep.
#pragma once

#include <filesystem>
#include <span>
#include <string>

#include "engine/simulator.hpp"
#include "graph/prepare.hpp"
#include "report/metrics.hpp"

namespace shardsim::cli {

using graph::Prepared;

// Throws ConfigError for any problem with the input, including forced collective algorithms
// that cannot run the graph's collectives.
[[nodiscard]] Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments);

struct Outcome {
  engine::SimulationResult result;
  report::Summary summary;
};

// Simulates a prepared scenario (engine/scenario_run.hpp) and summarises it. Creates the
// process's one SimGrid engine.
[[nodiscard]] Outcome simulate(const Prepared& p);

}  // namespace shardsim::cli
