// From a scenario file to a summary: load and check the files (config), prepare the step graph
// (graph::prepare), check and simulate it (engine), summarise (report). Shared by run, export,
// check and sweep.
#pragma once

#include <filesystem>
#include <span>
#include <string>

#include "core/deadline.hpp"
#include "engine/simulator.hpp"
#include "graph/prepare.hpp"
#include "report/metrics.hpp"

namespace shardsim::cli {

using graph::Prepared;

// Throws ConfigError for any problem with the input, including forced collective algorithms
// that cannot run the graph's collectives.
// simulation.max_wall_time counts from `started` (when the command began).
[[nodiscard]] Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments,
                               Deadline::Clock::time_point started = Deadline::Clock::now());

struct Outcome {
  engine::SimulationResult result;
  report::Summary summary;
};

// Simulates a prepared scenario (engine/scenario_run.hpp) and summarises it, within the scenario's
// simulation.max_wall_time counted from `started` (when the command began). Creates the process's
// one SimGrid engine.
[[nodiscard]] Outcome simulate(const Prepared& p, Deadline::Clock::time_point started = Deadline::Clock::now());

}  // namespace shardsim::cli
