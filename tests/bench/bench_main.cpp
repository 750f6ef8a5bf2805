// make bench: simulation wall time and op instances per second for the cases the issues set
// targets for. Each case runs in a child process (SimGrid allows one engine per process); the
// figures are measured here, on this machine, one core per case.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/pipeline.hpp"
#include "engine/simulator.hpp"
#include "report/metrics.hpp"

namespace {

struct Case {
  const char* label;
  const char* scenario;
  std::vector<std::string> sets;
  double target_s;
};

// Llama 3.1 405B on 16,384 H100s (2,048 DGX nodes), one 8,192-token sequence per GPU.
const std::vector<std::string> k405b{"model.preset=llama3.1-405b", "cluster.nodes=2048"};

struct Result {
  double prepare_s = 0;
  double simulate_s = 0;
  double ops = 0;  // op instances (ops x ranks)
  double flows = 0;
  double step_s = 0;
  int world = 0;
  int simulated = 0;
};

Result measure(const Case& c) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto p = shardsim::cli::prepare(std::string(SHARDSIM_SOURCE_DIR) + "/" + c.scenario, c.sets);
  const auto t1 = clock::now();
  const auto outcome = shardsim::cli::simulate(p);
  const auto t2 = clock::now();
  const auto& r = outcome.result;
  const auto& s = outcome.summary;
  Result out;
  out.prepare_s = std::chrono::duration<double>(t1 - t0).count();
  out.simulate_s = std::chrono::duration<double>(t2 - t1).count();
  out.ops = static_cast<double>(r.stats.op_instances);
  out.flows = static_cast<double>(r.stats.flows);
  out.step_s = s.step_time;
  out.world = s.world_size;
  out.simulated = s.simulated_ranks;
  return out;
}

// Runs `c` in a child process and reads its Result back through a pipe.
bool run_isolated(const Case& c, Result& out) {
  std::fflush(stdout);  // or the child would print our buffered lines again
  std::array<int, 2> fds{};
  if (pipe(fds.data()) != 0) return false;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int rc = 0;
    try {
      const Result r = measure(c);
      rc = write(fds[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r) ? 0 : 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", c.label, e.what());
      rc = 1;
    }
    _exit(rc);
  }
  close(fds[1]);
  const bool ok = read(fds[0], &out, sizeof out) == static_cast<ssize_t>(sizeof out);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main() {
  auto with = [](std::vector<std::string> v, const char* extra) {
    v.emplace_back(extra);
    return v;
  };
  const std::vector<Case> cases{
      {"default scenario (Llama 3.1 8B, 8 GPUs)", "scenarios/llama3.1-8b_8xh100.yaml", {}, 0.05},
      {"Llama 3.1 70B, 1,024 GPUs, full", "scenarios/llama3.1-70b_1024xh100.yaml", {"simulation.mode=full"}, 1.0},
      {"Llama 3.1 70B, 1,024 GPUs, symmetric", "scenarios/llama3.1-70b_1024xh100.yaml", {"simulation.mode=symmetric"}, 1.0},
      {"Llama 3.1 405B, 16,384 GPUs, full", "scenarios/llama3.1-70b_1024xh100.yaml", with(k405b, "simulation.mode=full"), 10.0},
      {"Llama 3.1 405B, 16,384 GPUs, symmetric", "scenarios/llama3.1-70b_1024xh100.yaml", with(k405b, "simulation.mode=symmetric"), 10.0},
  };
  std::printf("%-40s %6s %9s %10s %11s %9s %10s %14s %8s\n", "case", "GPUs", "ranks sim", "simulate s", "op inst/s", "flows", "step s",
              "GPU-s / wall-s", "target");
  int missed = 0;
  for (const auto& c : cases) {
    Result r;
    if (!run_isolated(c, r)) {
      std::printf("%-40s failed\n", c.label);
      ++missed;
      continue;
    }
    const bool met = r.simulate_s <= c.target_s;
    missed += met ? 0 : 1;
    // Simulated GPU-seconds per wall-clock second: GPUs x simulated time / wall time.
    std::printf("%-40s %6d %9d %10.3f %11.0f %9.0f %10.3f %14.3g %5.2f s %s\n", c.label, r.world, r.simulated, r.simulate_s,
                r.ops / r.simulate_s, r.flows, r.step_s, r.world * r.step_s / r.simulate_s, c.target_s, met ? "met" : "MISSED");
  }
  return 0;
}
