#include "cli/sweep_workers.hpp"

#include <fmt/format.h>

#include <charconv>

#include "core/args.hpp"
#include "cli/pipeline.hpp"
#include "report/outputs.hpp"

namespace shardsim::cli {

sweep::PointFunction simulate_point_function(std::filesystem::path scenario, std::vector<std::string> sets) {
  return [scenario = std::move(scenario), sets = std::move(sets)](const sweep::Point& p) {
    const auto started = Deadline::Clock::now();  // each point gets simulation.max_wall_time
    std::vector<std::string> assignments = sets;
    assignments.insert(assignments.end(), p.assignments.begin(), p.assignments.end());
    const Prepared prepared = prepare(scenario, assignments, started);
    return report::summary_json(simulate(prepared, started).summary);
  };
}

int parse_jobs(const std::optional<std::string>& text, int fallback) {
  if (!text) return std::max(1, fallback);
  int n = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (ec != std::errc{} || end != text->data() + text->size() || n < 1 || n > 4096) {
    throw UsageError(fmt::format("-j expects a number of worker processes from 1 to 4096; got \"{}\"", *text));
  }
  return n;
}

}  // namespace shardsim::cli
