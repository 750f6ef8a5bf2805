#include "cli/pipeline.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <optional>

#include "engine/scenario_run.hpp"
#include "engine/variation.hpp"

namespace shardsim::cli {
namespace {

// The step time of the same run without its stragglers: what the slow GPUs and links cost is the
// difference. Simulated in a child process forked before the run's own engine starts (SimGrid
// allows one engine per process, and a forked engine cannot start again), so the two run side
// by side. finish() returns a negative time when it could not be had.
class Baseline {
 public:
  Baseline(const Prepared& p, const Deadline& deadline) {
    std::array<int, 2> fds{};
    if (::pipe(fds.data()) != 0) return;
    pid_ = ::fork();
    if (pid_ < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return;
    }
    if (pid_ == 0) {
      ::close(fds[0]);
      double step = -1;
      try {
        Prepared alike = p;
        // Every GPU alike: per-GPU draws (stragglers.gpu_variation) are measured against no
        // variation at all, not against the fleet's expected pace they replace.
        if (alike.scenario.stragglers.gpu_variation > 0) alike.scenario.cluster.topology.gpu.variation = 0;
        alike.scenario.stragglers = {};
        alike.scenario.simulation.mode = config::SimulationMode::full;  // stragglers run in full mode too
        const auto r = engine::simulate(alike, deadline);
        step = report::summarize({alike.scenario, alike.model, alike.graph, r.timeline}).step_time;
      } catch (...) {
      }
      const bool ok = ::write(fds[1], &step, sizeof step) == static_cast<ssize_t>(sizeof step);
      ::_exit(ok ? 0 : 1);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  Baseline(const Baseline&) = delete;
  Baseline& operator=(const Baseline&) = delete;
  ~Baseline() { (void)finish(); }

  double finish() {
    double step = -1;
    if (fd_ >= 0) {
      if (::read(fd_, &step, sizeof step) != static_cast<ssize_t>(sizeof step)) step = -1;
      ::close(fd_);
      fd_ = -1;
    }
    if (pid_ > 0) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    return step;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

}  // namespace

Prepared prepare(const std::filesystem::path& scenario_file, std::span<const std::string> assignments,
                 Deadline::Clock::time_point started) {
  config::ScenarioConfig scenario = config::load_scenario(scenario_file, assignments);
  // The topology first: a fabric kind the engine does not know is reported before the model.
  engine::check_topology(scenario.cluster.topology);
  const Deadline deadline(started, scenario.simulation.max_wall_time.value.value());
  Prepared p = graph::prepare(std::move(scenario), deadline);
  engine::check(p);
  return p;
}

Outcome simulate(const Prepared& p, Deadline::Clock::time_point started) {
  const Deadline deadline(started, p.scenario.simulation.max_wall_time.value.value());
  std::optional<Baseline> baseline;
  if (p.scenario.stragglers.any()) baseline.emplace(p, deadline);
  Outcome out{engine::simulate(p, deadline), {}};
  out.summary = report::summarize({p.scenario, p.model, p.graph, out.result.timeline, &out.result.waiting, &out.result.holding,
                                   &out.result.waiting_for_cpu, &out.result.job_ends, &deadline, &out.result.compute_split,
                                   &out.result.communicators});
  if (baseline) out.summary.step_time_without_stragglers = baseline->finish();
  out.summary.gpu_pace = engine::fleet_pace(p.scenario);
  return out;
}

}  // namespace shardsim::cli
