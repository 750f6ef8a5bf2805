// shardsim-replay --graph GRAPH.json --backend nccl|cpu --out DIR: runs the step graph that
// `shardsim export` wrote on real hardware, one process per rank, and writes the measured
// timeline (DIR/timeline.json, docs/timeline-format.md) and a Chrome trace (DIR/trace.json).
// Exit codes: 0 success, 1 runtime failure (CUDA, NCCL, MPI, out of memory, a hang), 2 bad input.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <vector>

#include "core/args.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "cpu/host_memory.hpp"
#include "graph/timeline_io.hpp"
#include "replay/executor.hpp"
#include "report/outputs.hpp"
#include "tools/options.hpp"

namespace {

using namespace shardsim;

constexpr int kTraceRanks = 64;

std::optional<int> stall_rank(const Args& args) {
  const auto f = args.get("--fault");
  if (!f) return std::nullopt;
  if (f->rfind("stall:", 0) == 0) {
    try {
      return std::stoi(f->substr(6));
    } catch (const std::exception&) {
    }
  }
  throw UsageError(fmt::format("--fault: expected stall:RANK; got \"{}\"", *f));
}

int replay_command(std::span<const std::string> argv) {
  Args args("shardsim-replay --graph GRAPH.json --backend nccl|cpu --out DIR [options]\n  " + replay::available_backends() +
            " in this build");
  args.value("--graph", "GRAPH.json", "the step graph (shardsim export SCENARIO --out GRAPH.json)");
  args.value("--out", "DIR", "where to write timeline.json and trace.json");
  replay::declare_backend_options(args);
  args.value("--warmup", "N", "unmeasured runs of the step before the measured one (default 1)");
  args.value("--fault", "stall:RANK", "testing: RANK never arrives at the measured step");
  args.parse(argv);
  const auto graph_file = args.get("--graph");
  const auto out = args.get("--out");
  if (!graph_file || !out || !args.positional().empty())
    throw UsageError("usage: shardsim-replay --graph GRAPH.json --backend nccl|cpu --out DIR\n" + args.help());
  const replay::BackendChoice choice = replay::backend_choice(args, *out);
  replay::ReplayOptions options;
  options.stall_rank = stall_rank(args);
  if (const auto w = args.get("--warmup")) {
    try {
      options.warmup = std::stoi(*w);
    } catch (const std::exception&) {
      options.warmup = -1;
    }
    if (options.warmup < 0 || options.warmup > 100) throw UsageError(fmt::format("--warmup: expected 0..100; got \"{}\"", *w));
  }

  const graph::StepGraph g = replay::load_graph(*graph_file);
  const replay::RankEnv env = replay::rank_env([](const char* n) { return std::getenv(n); });
  const int world = env.launcher != replay::Launcher::none ? env.world : replay::nprocs(args).value_or(g.info.world_size);
  replay::check_replayable(g, world, *graph_file);
  // Ranks this program starts itself all run on this machine: refuse what would not fit.
  if (choice.name == "cpu" && env.launcher == replay::Launcher::none) {
    replay::check_cpu_replay_fits(g, choice.scale, world, replay::available_host_memory(), *graph_file);
  }
  std::error_code ec;
  std::filesystem::create_directories(*out, ec);
  if (ec) throw RuntimeError(fmt::format("{}: cannot create directory: {}", *out, ec.message()));

  return replay::run_on_ranks("shardsim-replay", choice, world, argv, [&](replay::Backend& b, replay::Watchdog& w, const replay::RankEnv&) {
    replay::check_replayable(g, b.world(), *graph_file);
    const replay::RankTimes times = replay::replay_step(g, b, w, options);
    w.kick("the other ranks' timelines");
    const auto all = b.gather(times.flatten());
    if (b.rank() != 0) return 0;
    const graph::Timeline t = replay::merge_ranks(g.size(), b.world(), all);
    std::vector<int> ranks(static_cast<std::size_t>(b.world()));
    std::iota(ranks.begin(), ranks.end(), 0);
    const auto file = graph::make_timeline_file(g, t, {"measured", b.name(), b.device()}, ranks);
    const std::filesystem::path dir = *out;
    write_file_atomic(dir / "timeline.json", graph::timeline_text(file) + "\n");
    write_file_atomic(dir / "trace.json", report::chrome_trace(g, t, kTraceRanks));
    std::cout << fmt::format(
        "shardsim-replay: {} ops on {} rank(s), {}: step {:.3f} ms (makespan)\nwrote {}/{{timeline.json, trace.json}}\n", g.size(),
        b.world(), b.device(), t.makespan() * 1e3, dir.string());
    return 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return replay_command(args);
  } catch (const HelpRequested& e) {
    std::cout << e.what();
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "shardsim-replay: " << e.what() << "\n";
    return 2;
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "shardsim-replay: error: " << e.what() << "\n";
    return 1;
  }
}
