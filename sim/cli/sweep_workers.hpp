// What sweep and tune workers do, and how many run: shared by cmd_sweep.cpp and cmd_tune.cpp.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sweep/executor.hpp"

namespace shardsim::cli {

// One point: the scenario with the common overrides and then the point's own, prepared and
// simulated like `shardsim run --set ...`, summarised as run --json's object. Runs inside a
// worker process (one SimGrid engine per process).
[[nodiscard]] sweep::PointFunction simulate_point_function(std::filesystem::path scenario, std::vector<std::string> sets);

// The value of -j: a number from 1 to 4096, or `fallback` (at least 1) when absent. Throws
// UsageError.
[[nodiscard]] int parse_jobs(const std::optional<std::string>& text, int fallback);

}  // namespace shardsim::cli
