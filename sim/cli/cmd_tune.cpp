// shardsim tune SCENARIO [--set KEY=VALUE]... [--memory-limit BYTES] [--batch N] [--finalists K]
//                [-j N] [--out DIR]
// Searches the settings of sweep/tune.hpp for the highest tokens/s per GPU that fits, and prints
// what it searched and found as YAML comments followed by the settings to paste into the
// scenario, so that the whole output is valid YAML.
#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/sweep_workers.hpp"
#include "config/scenario.hpp"
#include "core/units.hpp"
#include "report/atomic_file.hpp"
#include "sweep/driver.hpp"
#include "sweep/progress.hpp"
#include "sweep/svg.hpp"
#include "sweep/tune.hpp"
#include "sweep/worker_pool.hpp"

namespace shardsim::cli {
namespace {

constexpr std::size_t kDefaultFinalists = 4;
constexpr std::size_t kShown = 5;

Args tune_args() {
  Args a;
  a.repeated("--set", "KEY=VALUE", "override a scenario key before tuning");
  a.value("--memory-limit", "BYTES", "peak memory allowed, e.g. 70GiB (default: the GPU's memory)");
  a.value("--batch", "N", "sequences per GPU per optimizer step, kept fixed (default: micro_batch x grad_accum)");
  a.value("--finalists", "K", "stage-1 configurations refined in stage 2 (FSDP1; default 4)");
  a.value("-j", "N", "worker processes; default: the CPUs available");
  a.value("--out", "DIR", "keep each stage's sweep (results, pictures) and recommended.yaml in DIR");
  return a;
}

std::int64_t positive(const std::optional<std::string>& text, std::string_view option, std::int64_t fallback) {
  if (!text) return fallback;
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (ec != std::errc{} || end != text->data() + text->size() || n < 1 || n > (1 << 20)) {
    throw UsageError(fmt::format("{} expects a whole number from 1 to {}; got \"{}\"", option, 1 << 20, *text));
  }
  return n;
}

std::string axes_text(const std::vector<sweep::Axis>& axes) {
  std::string out;
  for (const auto& a : axes) out += fmt::format("{}{} ({})", out.empty() ? "" : " x ", a.label(), a.size());
  return out;
}

std::string settings_text(const sweep::PointResult& r) {
  std::string out;
  for (const auto& a : r.assignments) out += (out.empty() ? "" : " ") + a;
  return out.empty() ? "the scenario as written" : out;
}

sweep::SweepOutcome run_stage(const sweep::SweepSpec& spec, int jobs, const sweep::PointFunction& fn) {
  sweep::Progress progress(stderr, ::isatty(STDERR_FILENO) != 0, fmt::format("-j {}", jobs));
  sweep::WorkerPool pool(jobs, fn);
  return sweep::run_sweep(spec, pool, &progress);
}

}  // namespace

int cmd_tune(std::span<const std::string> argv) {
  Args args = tune_args();
  args.parse(argv);
  if (args.positional().size() != 1) throw UsageError("tune expects one scenario file\n" + args.help());
  const std::filesystem::path file = args.positional().front();
  const auto& sets = args.all("--set");
  const auto base = config::load_scenario(file, sets);
  std::optional<double> limit;
  if (auto m = args.get("--memory-limit")) {
    try {
      limit = parse_bytes(*m).value();
    } catch (const std::invalid_argument& e) {
      throw ConfigError(Location{fmt::format("--memory-limit {}", *m), 0, 0}, "", e.what());
    }
  }
  std::optional<std::int64_t> batch;
  if (args.has("--batch")) batch = positive(args.get("--batch"), "--batch", 1);
  const auto finalists = static_cast<std::size_t>(positive(args.get("--finalists"), "--finalists", kDefaultFinalists));
  const int jobs = parse_jobs(args.get("-j"), sweep::available_cpus());
  const auto out = args.get("--out");

  const sweep::TuneSpace space = sweep::tune_space(base, batch);
  sweep::check_axes(file, sets, space.stage1);
  const auto fn = simulate_point_function(file, std::vector<std::string>(sets.begin(), sets.end()));
  const auto t0 = std::chrono::steady_clock::now();

  sweep::SweepSpec stage1{file, {sets.begin(), sets.end()}, sweep::dimensions_of(space.stage1), sweep::stage1_points(space), {}, {}, false};
  if (out) stage1.out = std::filesystem::path(*out) / "stage-1";
  auto results = run_stage(stage1, jobs, fn).results;
  const sweep::PointResult baseline = results.back();

  std::size_t stage2_count = 0;
  std::size_t finalist_count = 0;
  if (!space.stage2.empty()) {
    const auto best1 = sweep::finalists(results, limit, finalists);
    finalist_count = best1.size();
    auto dims = sweep::dimensions_of(space.stage1);
    for (const auto& d : sweep::dimensions_of(space.stage2)) dims.push_back(d);
    sweep::SweepSpec stage2{file, stage1.sets, dims, sweep::stage2_points(space, best1), {}, {}, false};
    if (out) stage2.out = std::filesystem::path(*out) / "stage-2";
    stage2_count = stage2.points.size();
    if (stage2_count > 0) {
      auto more = run_stage(stage2, jobs, fn).results;
      results.insert(results.end(), more.begin(), more.end());
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::size_t fit = 0, failed = 0;
  for (const auto& r : results) {
    fit += sweep::fits(r, limit) ? 1 : 0;
    failed += r.ok() ? 0 : 1;
  }
  const std::string limit_text =
      limit ? sweep::svg::gib(*limit) : fmt::format("{} (the GPU's memory)", sweep::svg::gib(base.cluster.topology.gpu.memory.value()));
  std::vector<std::string> c;
  c.push_back(fmt::format("shardsim tune: {} ({} GPUs), memory limit {}", base.name, base.world_size(), limit_text));
  if (!limit) c.push_back("(peak memory is allocated memory; PyTorch reserves more: leave headroom with --memory-limit)");
  c.push_back(
      fmt::format("stage 1: {} = {} configurations, and the scenario as written", axes_text(space.stage1), stage1.points.size() - 1));
  c.push_back(space.stage2.empty() ? "stage 2: none (FSDP2 has no backward_prefetch or limit_all_gathers setting to tune)"
                                   : fmt::format("stage 2: {} for the best {} that fit (with distinct results): {} configurations",
                                                 axes_text(space.stage2), finalist_count, stage2_count));
  c.push_back(fmt::format("simulated {} configurations in {:.1f} s with -j {}: {} fit, {} over the limit, {} failed", results.size(), wall,
                          jobs, fit, results.size() - fit - failed, failed));
  const auto top = sweep::ranked(results, limit, kShown);
  if (top.empty()) {
    for (const auto& line : c) std::cout << "# " << line << "\n";
    double least = 0;
    const sweep::PointResult* smallest = nullptr;
    for (const auto& r : results) {
      if (r.ok() && (smallest == nullptr || r.number("peak_memory_bytes") < least)) {
        smallest = &r;
        least = r.number("peak_memory_bytes");
      }
    }
    throw RuntimeError(smallest == nullptr ? "no configuration could be simulated; see the errors above"
                                           : fmt::format("no configuration fits in {}; the smallest peak was {} with {}", limit_text,
                                                         sweep::svg::gib(least), settings_text(*smallest)));
  }
  const auto& best = results[top.front()];
  const double base_tps = baseline.ok() ? baseline.number("tokens_per_s_per_gpu") : 0;
  c.push_back("");
  c.push_back(fmt::format("best: {:.0f} tokens/s per GPU, step {}, peak {}{}", best.number("tokens_per_s_per_gpu"),
                          sweep::svg::seconds(best.number("step_time_s")), sweep::svg::gib(best.number("peak_memory_bytes")),
                          baseline.ok() && base_tps > 0 ? fmt::format(" ({:+.1f}% over the scenario as written: {:.0f} tokens/s{})",
                                                                      100 * (best.number("tokens_per_s_per_gpu") / base_tps - 1), base_tps,
                                                                      sweep::fits(baseline, limit) ? "" : ", which does not fit")
                                                        : ""));
  c.push_back("top configurations:");
  for (std::size_t i = 0; i < top.size(); ++i) {
    const auto& r = results[top[i]];
    c.push_back(fmt::format("  {}. {:>8.0f} tokens/s  {:>10}  {:>9}  {}", i + 1, r.number("tokens_per_s_per_gpu"),
                            sweep::svg::seconds(r.number("step_time_s")), sweep::svg::gib(r.number("peak_memory_bytes")),
                            settings_text(r)));
  }
  c.push_back("");
  c.push_back(best.assignments.empty() ? "the scenario as written is the best found: nothing to change"
                                       : "recommended settings: paste into the scenario, replacing these keys");
  const std::string snippet = sweep::yaml_snippet(best.assignments, c);
  std::cout << snippet;
  if (out) report::write_file_atomic(std::filesystem::path(*out) / "recommended.yaml", snippet);
  return 0;
}

}  // namespace shardsim::cli
