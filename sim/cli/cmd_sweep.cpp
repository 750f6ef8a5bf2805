// shardsim sweep SCENARIO|SWEEP.yaml --grid KEY=V1,V2,... [--grid ...] [--zip ...] [--set KEY=VALUE]...
//                [-j N] [--shard I/N] [--retry-failed] --out DIR
// The scenario over a grid of overrides, each point in a worker process, results streamed to
// DIR (sweep/driver.hpp); under mpirun across ranks (sweep/distributed.hpp).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "core/args.hpp"
#include "cli/commands.hpp"
#include "cli/sweep_workers.hpp"
#include "config/yaml_load.hpp"
#include "sweep/distributed.hpp"
#include "sweep/driver.hpp"
#include "sweep/plots.hpp"
#include "sweep/progress.hpp"
#include "sweep/sweep_file.hpp"
#include "sweep/worker_pool.hpp"

namespace shardsim::cli {
namespace {

constexpr std::size_t kFailuresShown = 5;

Args sweep_args() {
  Args a("shardsim sweep SCENARIO|SWEEP.yaml --grid KEY=V1,V2,... [--grid ...] [-j N] [--shard I/N] --out DIR");
  a.repeated("--grid", "KEY=V1,V2,...", "sweep a scenario key over values (YAML; 1,2,4,...,64 continues a sequence)");
  a.repeated("--zip", "KEY=V1,V2,...", "keys advanced together: all --zip lists form one axis");
  a.repeated("--set", "KEY=VALUE", "override a scenario key for every point");
  a.value("-j", "N", "worker processes (per MPI rank); default: the CPUs available");
  a.value("--shard", "I/N", "run only share I of N (0 <= I < N) of the points, e.g. one Slurm array task");
  a.flag("--retry-failed", "run again the points an earlier run recorded as failed");
  a.value("--objective", "WHAT",
          "what the pictures and the best settings rank by: throughput (tokens/s per GPU, the default), step_time, or "
          "time_to_tokens:N (time to train on N tokens with the whole job)");
  a.value("--out", "DIR", "results.csv, results.jsonl, heatmap.svg, pareto.svg, index.html (required)");
  return a;
}

// The scenario, common overrides and axes: from a sweep file and/or the options.
// `set_where` gets where the sweep file wrote each of its set: entries.
sweep::SweepSpec spec_from(const Args& args, std::vector<sweep::Axis>& axes, std::vector<Location>& set_where) {
  const std::filesystem::path file = args.positional().front();
  sweep::SweepSpec spec;
  if (sweep::is_sweep_file(config::load_yaml_file(file))) {
    auto sf = sweep::load_sweep_file(file);
    spec.scenario = sf.scenario;
    spec.sets = std::move(sf.sets);
    set_where = std::move(sf.set_where);
    axes = std::move(sf.axes);
  } else {
    spec.scenario = file;
  }
  for (const auto& s : args.all("--set")) spec.sets.push_back(s);
  for (const auto& g : args.all("--grid")) axes.push_back(sweep::parse_grid_option(g));
  if (!args.all("--zip").empty()) axes.push_back(sweep::parse_zip_options(args.all("--zip")));
  if (axes.empty()) throw UsageError("sweep needs at least one --grid KEY=V1,V2,... (or a sweep file with grid:)\n" + args.help());
  return spec;
}

void print_summary(const sweep::SweepSpec& spec, const sweep::SweepOutcome& outcome, const std::string& how) {
  std::size_t fit = 0, oom = 0;
  for (const auto& r : outcome.results) {
    fit += r.fits() ? 1 : 0;
    oom += r.ok() && r.oom() ? 1 : 0;
  }
  std::cout << fmt::format("sweep: {} points{} ({} run now, {} from earlier runs): {} fit, {} out of memory, {} failed; {}\n",
                           outcome.results.size(),
                           spec.shard.whole() ? "" : fmt::format(" in shard {}/{}", spec.shard.index, spec.shard.count), outcome.ran,
                           outcome.reused, fit, oom, outcome.failed(), how);
  std::size_t shown = 0;
  for (const auto& r : outcome.results) {
    if (!r.ok() && shown++ < kFailuresShown) std::cout << "  failed: " << sweep::describe_result(r) << "\n";
  }
  if (outcome.failed() > kFailuresShown) {
    std::cout << fmt::format("  ... {} more failed points in results.csv\n", outcome.failed() - kFailuresShown);
  }
  if (const auto best = sweep::best_points(outcome.results, 1, spec.objective); !best.empty()) {
    std::cout << fmt::format("best by {}: ", spec.objective.name()) << sweep::describe_result(outcome.results[best.front()]) << "\n";
  }
  const auto dir = spec.shard.whole() ? *spec.out : *spec.out / spec.shard.dir_name();
  std::string files = "results.csv, results.jsonl";
  if (spec.shard.whole()) {
    files += std::filesystem::exists(dir / "heatmap.svg") ? ", heatmap.svg, pareto.svg, index.html" : ", pareto.svg, index.html";
  }
  std::cout << fmt::format("wrote {}/{{{}}}\n", dir.string(), files);
}

}  // namespace

int cmd_sweep(std::span<const std::string> argv) {
  Args args = sweep_args();
  args.parse(argv);
  if (args.positional().size() != 1) throw UsageError("sweep expects one scenario or sweep file\n" + args.help());
  const auto out = args.get("--out");
  if (!out) throw UsageError("sweep needs --out DIR for its results\n" + args.help());
  std::vector<sweep::Axis> axes;
  std::vector<Location> set_where;
  sweep::SweepSpec spec = spec_from(args, axes, set_where);
  sweep::check_axes(spec.scenario, spec.sets, axes, set_where);
  spec.dimensions = sweep::dimensions_of(axes);
  spec.points = sweep::expand(axes);
  if (auto s = args.get("--shard")) spec.shard = sweep::parse_shard(*s);
  spec.out = *out;
  spec.retry_failed = args.has("--retry-failed");
  if (auto o = args.get("--objective")) spec.objective = sweep::parse_objective(*o);

  const bool mpi = sweep::started_by_mpi();
  const int jobs = parse_jobs(args.get("-j"), sweep::available_cpus() / (mpi ? sweep::local_ranks() : 1));
  const auto fn = simulate_point_function(spec.scenario, spec.sets);
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  if (mpi) {
    sweep::Progress progress(stderr, terminal, fmt::format("MPI ranks x -j {}", jobs));
    const auto run = sweep::run_sweep_mpi(spec, jobs, fn, &progress);
    if (!run) return 0;  // not rank 0: rank 0 reports
    print_summary(spec, run->outcome,
                  fmt::format("{} MPI ranks x -j {} (points per rank: {})", run->points_per_rank.size(), jobs,
                              fmt::join(run->points_per_rank, ", ")));
    return 0;
  }
  sweep::Progress progress(stderr, terminal, fmt::format("-j {}", jobs));
  sweep::WorkerPool pool(jobs, fn);
  print_summary(spec, sweep::run_sweep(spec, pool, &progress), fmt::format("-j {}", jobs));
  return 0;
}

}  // namespace shardsim::cli
