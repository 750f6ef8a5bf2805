// shardsim tune SCENARIO [--set KEY=VALUE]... [--memory-limit BYTES] [--batch N] [--tp auto|N,...] [--pp auto|N,...]
//                [--cp auto|N,...] [--pp-schedule auto|S,...] [--tp-async] [--float8 auto|R,...]
//                [--compile] [--finalists K] [--exhaustive]
//                [-j N] [--out DIR]
// Searches the settings of sweep/tune.hpp for the highest tokens/s per GPU that fits, and prints
// what it searched and found as YAML comments followed by the settings to paste into the
// scenario, so that the whole output is valid YAML.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/sweep_workers.hpp"
#include "config/scenario.hpp"
#include "core/args.hpp"
#include "core/atomic_file.hpp"
#include "core/units.hpp"
#include "graph/prepare.hpp"
#include "model/transformer_spec.hpp"
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
  Args a("shardsim tune SCENARIO [--memory-limit 70GiB] [-j N] [--out DIR]");
  a.repeated("--set", "KEY=VALUE", "override a scenario key before tuning");
  a.value("--memory-limit", "BYTES", "peak reserved memory allowed, e.g. 70GiB (default: what the GPU leaves to PyTorch's allocator)");
  a.value("--batch", "N", "sequences per data-parallel rank per optimizer step, kept fixed (default: micro_batch x grad_accum)");
  a.value("--tp", "auto | N,N,...",
          "also search tensor-parallel degrees (auto: those inside a node the model allows), keeping the global batch");
  a.value("--pp", "auto | N,N,...",
          "also search pipeline-parallel degrees (auto: 1, 2, 4, ... up to the layers, dividing the GPUs), keeping the global "
          "batch; a pipelined layout runs 1F1B over one-sequence micro-batches");
  a.value("--cp", "auto | N,N,...",
          "also search context-parallel degrees (auto: 1, 2, 4, ... up to a node's GPUs that split the sequence), keeping the "
          "global batch");
  a.value("--pp-schedule", "auto | NAME,NAME,...",
          "pipeline schedules for the layouts with pp > 1 (auto: 1f1b, gpipe, interleaved_1f1b, and zbv, interleaved_zb without "
          "torch.compile); default: the scenario's");
  a.flag("--tp-async",
         "also try async TP on and off on the tensor-parallel layouts (it needs sequence parallelism and "
         "training.compile)");
  a.value("--float8", "auto | RECIPE,RECIPE,...",
          "also search training.float8.recipe (auto: none and every recipe the GPU has: tensorwise, rowwise, rowwise_with_gw_hp, "
          "mxfp8)");
  a.flag("--compile",
         "also search torch.compile per block on and off (training.compile: true, false; layouts that need one of them, async TP "
         "or a zero-bubble schedule, are refused with the reason)");
  a.value("--finalists", "K",
          "stage 2 searches sharding and wrap on the best K configurations of stage 1 and on the K nearest to fitting of those "
          "faster; stage 3 prefetching on the best K of all (default 4)");
  a.flag("--exhaustive",
         "search every sharding and wrap with every configuration of stage 1 (the full grid, about 30 times the simulations) "
         "instead of on stage 1's best");
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

// "a,b,c" -> {"a", "b", "c"} (an empty item stays, for the caller to refuse).
std::vector<std::string> comma_list(std::string_view rest) {
  std::vector<std::string> out;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    out.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return out;
}

// --tp / --pp: "auto" (what `automatic` gives) or a comma list of degrees; empty when not given.
template <class F>
std::vector<int> degrees(const std::optional<std::string>& text, std::string_view option, F&& automatic) {
  if (!text) return {};
  if (*text == "auto") return automatic();
  std::vector<int> out;
  for (const auto& item : comma_list(*text)) out.push_back(static_cast<int>(positive(item, option, 1)));
  return out;
}

// --float8: training.float8.recipe as one more shape axis (stage 1).
sweep::Axis float8_axis(const config::ScenarioConfig& base, const std::string& text) {
  std::vector<std::string> recipes;
  if (text == "auto") {
    recipes.emplace_back("none");
    const auto& gpu = base.cluster.topology.gpu;
    if (gpu.peak_fp8.value() > 0) recipes.insert(recipes.end(), {"tensorwise", "rowwise", "rowwise_with_gw_hp"});
    if (gpu.peak_mxfp8.value() > 0) recipes.emplace_back("mxfp8");
  } else {
    recipes = comma_list(text);
  }
  sweep::Axis axis;
  axis.keys = {"training.float8.recipe"};
  for (auto& r : recipes) {
    if (r.empty()) throw UsageError(fmt::format("--float8 expects auto or recipe names separated by commas; got \"{}\"", text));
    axis.values.push_back({r});
  }
  axis.where = Location{fmt::format("--float8 {}", text), 0, 0};
  return axis;
}

// --compile: training.compile on and off as one more shape axis (on first: the pre-flight check
// loads each value with the other axes at their first, and async TP needs compile).
sweep::Axis compile_axis() {
  sweep::Axis axis;
  axis.keys = {"training.compile"};
  axis.values = {{"true"}, {"false"}};
  axis.where = Location{"--compile", 0, 0};
  return axis;
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

struct Options {
  std::filesystem::path scenario;
  std::vector<std::string> sets;
  std::optional<double> limit;  // bytes
  std::size_t finalists = kDefaultFinalists;
  bool exhaustive = false;
  int jobs = 1;
  std::optional<std::filesystem::path> out;
};

struct Search {
  std::vector<sweep::PointResult> results;  // stage 1 (the scenario as written last), then stages 2 and 3
  sweep::PointResult baseline;
  std::size_t stage1 = 0, shapes = 0, shapes_fit = 0, beyond = 0, stage2 = 0, finalists = 0, stage3 = 0;
  std::size_t left_out = 0;                               // points whose wrap units would not fit a pipeline stage
  std::vector<std::pair<std::string, std::size_t>> moot;  // a stage-3 key, and for how many finalists it did not apply
  double wall_s = 0;
};

// The stage-3 keys that do not apply to a finalist: those the scenario warns about ("...; it is
// ignored") when loaded with the finalist's settings and every stage-3 key set. Counted in `moot`.
sweep::MootKeys moot_keys(const Options& o, const sweep::TuneSpace& space, std::vector<std::pair<std::string, std::size_t>>& moot) {
  return [&o, &space, &moot](const sweep::PointResult& finalist) {
    std::vector<std::string> sets = o.sets;
    sets.insert(sets.end(), finalist.assignments.begin(), finalist.assignments.end());
    std::vector<std::string> keys;
    for (const auto& a : space.prefetch) {
      for (std::size_t k = 0; k < a.keys.size(); ++k) {
        sets.push_back(fmt::format("{}={}", a.keys[k], a.values.back()[k]));
        keys.push_back(a.keys[k]);
      }
    }
    std::vector<std::string> out;
    try {
      for (const auto& w : config::load_scenario(o.scenario, sets).warnings) {
        if (std::find(keys.begin(), keys.end(), w.key_path) == keys.end()) continue;
        out.push_back(w.key_path);
        auto it = std::find_if(moot.begin(), moot.end(), [&](const auto& m) { return m.first == w.key_path; });
        if (it == moot.end()) it = moot.insert(moot.end(), {w.key_path, 0});
        ++it->second;
      }
    } catch (const std::exception&) {
      // Nothing known to be moot: stage 3 simulates the variants and reports what fails.
    }
    return out;
  };
}

// One stage's sweep, its dimensions and points, kept in `out`/`folder` with --out.
sweep::SweepSpec stage_spec(const Options& o, std::vector<std::vector<std::string>> dims, std::vector<sweep::Point> points,
                            const char* folder) {
  sweep::SweepSpec spec{o.scenario, o.sets, std::move(dims), std::move(points), {}, {}, false, {}};
  if (o.out) spec.out = *o.out / folder;
  return spec;
}

Search search(const Options& o, const sweep::TuneSpace& space) {
  const auto fn = simulate_point_function(o.scenario, o.sets);
  const auto t0 = std::chrono::steady_clock::now();
  Search s;
  auto dims = sweep::dimensions_of(space.stage1_axes(o.exhaustive));
  const auto stage1 = stage_spec(o, dims, sweep::stage1_points(space, o.exhaustive, &s.left_out), "stage-1");
  s.stage1 = stage1.points.size();
  s.results = run_stage(stage1, o.jobs, fn).results;
  s.baseline = s.results.back();
  if (!o.exhaustive) {
    const auto shapes = sweep::stage2_shapes(s.results, o.limit, o.finalists, &s.beyond);
    s.shapes = shapes.size();
    s.shapes_fit =
        static_cast<std::size_t>(std::count_if(shapes.begin(), shapes.end(), [&](const auto& r) { return sweep::fits(r, o.limit); }));
    for (const auto& d : sweep::dimensions_of(space.fsdp)) dims.push_back(d);
    std::size_t left_out = 0;
    const auto stage2 = stage_spec(o, dims, sweep::stage2_points(space, shapes, &left_out), "stage-2");
    s.left_out += left_out;
    s.stage2 = stage2.points.size();
    if (s.stage2 > 0) {
      auto more = run_stage(stage2, o.jobs, fn).results;
      s.results.insert(s.results.end(), more.begin(), more.end());
    }
  }
  const auto best = sweep::finalists(s.results, o.limit, o.finalists);
  s.finalists = best.size();
  for (const auto& d : sweep::dimensions_of(space.prefetch)) dims.push_back(d);
  const auto stage3 =
      stage_spec(o, dims, sweep::stage3_points(space, best, moot_keys(o, space, s.moot)), o.exhaustive ? "stage-2" : "stage-3");
  s.stage3 = stage3.points.size();
  if (s.stage3 > 0) {  // none when nothing fits
    auto more = run_stage(stage3, o.jobs, fn).results;
    s.results.insert(s.results.end(), more.begin(), more.end());
  }
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

// What was searched, as comment lines.
std::vector<std::string> searched(const Options& o, const config::ScenarioConfig& base, const sweep::TuneSpace& space, const Search& s,
                                  const std::string& limit_text) {
  std::size_t fit = 0, failed = 0;
  for (const auto& r : s.results) {
    fit += sweep::fits(r, o.limit) ? 1 : 0;
    failed += r.ok() ? 0 : 1;
  }
  std::vector<std::string> c;
  c.push_back(fmt::format("shardsim tune: {} ({} GPUs), memory limit: {}", base.name, base.world_size(), limit_text));
  if (!o.limit)
    c.push_back("(peak memory is the modelled reserved memory; leave headroom for what the model leaves out with --memory-limit)");
  c.push_back(fmt::format("stage 1: {} = {} configurations{}, and the scenario as written", axes_text(space.stage1_axes(o.exhaustive)),
                          s.stage1 - 1 + (o.exhaustive ? s.left_out : 0), o.exhaustive ? "" : " at the scenario's sharding and wrap"));
  if (space.too_deep > 0) {
    c.push_back(fmt::format("  {} pipelined layout{} not searched: more model stages (pp x stages per rank) than the model's {} blocks",
                            space.too_deep, space.too_deep == 1 ? "" : "s", space.blocks));
  }
  if (!o.exhaustive) {
    const std::size_t near = s.shapes - s.shapes_fit;
    const std::string which = s.shapes == 0       ? std::string("none: nothing fits, or could with less sharded state")
                              : s.shapes_fit == 0 ? fmt::format("the {} nearest to fitting (none fits)", near)
                              : near == 0
                                  ? fmt::format("the best {} that fit", s.shapes_fit)
                                  : fmt::format("the best {} that fit and the {} nearest to fitting of those faster", s.shapes_fit, near);
    c.push_back(fmt::format("stage 2: {} for {}: {} configurations", axes_text(space.fsdp), which, s.stage2));
    if (s.beyond > 0) {
      c.push_back(fmt::format("  {} that do not fit left out: their activations, logits and workspaces alone exceed the limit", s.beyond));
    }
  }
  if (s.left_out > 0) {
    c.push_back(fmt::format("  {} left out: their FSDP units would hold more blocks than a pipeline stage has",
                            o.exhaustive ? fmt::format("{} of them", s.left_out) : fmt::format("and {} more", s.left_out)));
  }
  c.push_back(fmt::format("stage {}: {} for the best {} that fit (with distinct results): {} configurations", o.exhaustive ? 2 : 3,
                          axes_text(space.prefetch), s.finalists, s.stage3));
  for (const auto& [key, n] : s.moot) {
    c.push_back(fmt::format("  {} not tried on {} of them: their settings make it moot", key, n));
  }
  c.push_back(fmt::format("simulated {} configurations in {:.1f} s with -j {}: {} fit, {} over the limit, {} failed", s.results.size(),
                          s.wall_s, o.jobs, fit, s.results.size() - fit - failed, failed));
  // Why configurations failed, each reason once with how many it refused (the first its example).
  std::vector<std::pair<std::string, std::vector<const sweep::PointResult*>>> reasons;
  for (const auto& r : s.results) {
    if (r.ok()) continue;
    const std::string first_line = r.error.substr(0, r.error.find('\n'));
    auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& x) { return x.first == first_line; });
    if (it == reasons.end()) it = reasons.insert(reasons.end(), {first_line, {}});
    it->second.push_back(&r);
  }
  for (std::size_t i = 0; i < reasons.size() && i < kShown; ++i) {
    const auto& [why, points] = reasons[i];
    c.push_back(fmt::format("  {} failed: {} (e.g. {})", points.size(), why, settings_text(*points.front())));
  }
  if (reasons.size() > kShown) c.push_back(fmt::format("  and {} other reasons (--out DIR keeps each point's)", reasons.size() - kShown));
  return c;
}

// The best configurations found, as comment lines.
std::vector<std::string> found(const Options& o, const Search& s, const std::vector<std::size_t>& top) {
  const auto& best = s.results[top.front()];
  const double tps = best.number("tokens_per_s_per_gpu");
  const double base_tps = s.baseline.ok() ? s.baseline.number("tokens_per_s_per_gpu") : 0;
  std::string versus;
  if (base_tps > 0) {
    versus = fmt::format(" ({:+.1f}% over the scenario as written: {:.0f} tokens/s{})", 100 * (tps / base_tps - 1), base_tps,
                         sweep::fits(s.baseline, o.limit) ? "" : ", which does not fit");
  }
  std::vector<std::string> c{
      "",
      fmt::format("best: {:.0f} tokens/s per GPU, step {}, peak {}{}", tps, sweep::svg::seconds(best.number("step_time_s")),
                  sweep::svg::gib(best.number("peak_memory_bytes")), versus),
      "top configurations:"};
  for (std::size_t i = 0; i < top.size(); ++i) {
    const auto& r = s.results[top[i]];
    c.push_back(fmt::format("  {}. {:>8.0f} tokens/s  {:>10}  {:>9}  {}", i + 1, r.number("tokens_per_s_per_gpu"),
                            sweep::svg::seconds(r.number("step_time_s")), sweep::svg::gib(r.number("peak_memory_bytes")),
                            settings_text(r)));
  }
  c.push_back("");
  c.push_back(best.assignments.empty() ? "the scenario as written is the best found: nothing to change"
                                       : "recommended settings: paste into the scenario, replacing these keys");
  // Keys of the scenario the best settings make moot: the pasted scenario would warn of them.
  const auto warnings = sweep::point_warnings(best);
  if (!best.assignments.empty() && !warnings.empty()) {
    c.push_back("and remove what no longer applies with them (the scenario would warn):");
    for (const auto& w : warnings) c.push_back("  " + w);
  }
  return c;
}

[[noreturn]] void nothing_fits(const Search& s, std::optional<double> limit, const std::string& limit_text) {
  const sweep::PointResult* smallest = nullptr;
  for (const auto& r : s.results) {
    if (r.ok() && (smallest == nullptr || r.number("peak_memory_bytes") < smallest->number("peak_memory_bytes"))) smallest = &r;
  }
  if (smallest == nullptr) throw RuntimeError("no configuration could be simulated; see the errors above");
  // Under the limit and still not fitting: it fits only by releasing the allocator's cache (PointResult::oom).
  const double retries = smallest->number("alloc_retries");
  const std::string how =
      retries > 0 && !(limit && smallest->number("peak_memory_bytes") > *limit)
          ? fmt::format(
                ", which fits only by releasing the allocator's cache {:.0f} time{} (a stall each that the simulated step leaves out)",
                retries, retries == 1 ? "" : "s")
          : std::string();
  throw RuntimeError(fmt::format("no configuration fits in {}; the smallest peak was {} with {}{}", limit_text,
                                 sweep::svg::gib(smallest->number("peak_memory_bytes")), settings_text(*smallest), how));
}

}  // namespace

int cmd_tune(std::span<const std::string> argv) {
  Args args = tune_args();
  args.parse(argv);
  if (args.positional().size() != 1) throw UsageError("tune expects one scenario file\n" + args.help());
  Options o;
  o.scenario = args.positional().front();
  o.sets.assign(args.all("--set").begin(), args.all("--set").end());
  const auto base = config::load_scenario(o.scenario, o.sets);
  if (auto m = args.get("--memory-limit")) {
    try {
      o.limit = parse_bytes(*m).value();
    } catch (const std::invalid_argument& e) {
      throw ConfigError(Location{fmt::format("--memory-limit {}", *m), 0, 0}, "", e.what());
    }
  }
  std::optional<std::int64_t> batch;
  if (args.has("--batch")) batch = positive(args.get("--batch"), "--batch", 1);
  o.finalists = static_cast<std::size_t>(positive(args.get("--finalists"), "--finalists", kDefaultFinalists));
  o.exhaustive = args.has("--exhaustive");
  o.jobs = parse_jobs(args.get("-j"), sweep::available_cpus());
  if (auto out = args.get("--out")) o.out = *out;

  sweep::Layouts layouts;
  layouts.tp = degrees(args.get("--tp"), "--tp", [&] { return graph::tensor_parallel_degrees(base); });
  layouts.pp = degrees(args.get("--pp"), "--pp", [&] { return graph::pipeline_parallel_degrees(base); });
  layouts.cp = degrees(args.get("--cp"), "--cp", [&] { return graph::context_parallel_degrees(base); });
  if (auto schedules = args.get("--pp-schedule")) {
    layouts.pp_schedules = *schedules == "auto" ? graph::pipeline_schedules(base) : comma_list(*schedules);
    for (const auto& name : layouts.pp_schedules) {
      if (name.empty())
        throw UsageError(fmt::format("--pp-schedule expects auto or schedule names separated by commas; got \"{}\"", *schedules));
    }
  }
  layouts.tp_async = args.has("--tp-async");
  layouts.blocks = model::resolve_spec(base.model).layers;
  sweep::TuneSpace space = sweep::tune_space(base, batch, layouts);
  if (auto f8 = args.get("--float8")) space.shape.push_back(float8_axis(base, *f8));
  if (args.has("--compile")) space.shape.push_back(compile_axis());
  sweep::check_axes(o.scenario, o.sets, space.stage1_axes(true), {}, true);
  const Search s = search(o, space);
  const std::string limit_text =
      o.limit ? sweep::svg::gib(*o.limit)
              : fmt::format("what each GPU leaves to PyTorch's allocator (its {} less the CUDA context and NCCL's buffers)",
                            sweep::svg::gib(base.cluster.topology.gpu.memory.value()));
  auto comments = searched(o, base, space, s, limit_text);
  const auto top = sweep::ranked(s.results, o.limit, kShown);
  if (top.empty()) {
    std::cout << sweep::yaml_snippet({}, comments);
    nothing_fits(s, o.limit, limit_text);
  }
  const auto more = found(o, s, top);
  comments.insert(comments.end(), more.begin(), more.end());
  const std::string snippet = sweep::yaml_snippet(s.results[top.front()].assignments, comments);
  std::cout << snippet;
  if (o.out) write_file_atomic(*o.out / "recommended.yaml", snippet);
  return 0;
}

}  // namespace shardsim::cli
