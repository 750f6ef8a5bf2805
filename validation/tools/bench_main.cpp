// shardsim-bench --backend nccl|cpu --out FILE: microbenchmarks for `shardsim calibrate`
// (replay/microbench.hpp): collective size sweeps, GEMM shape sweeps, attention and HBM copies.
// Exit codes as shardsim-replay.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include "core/args.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "replay/microbench.hpp"
#include "tools/options.hpp"

namespace {

using namespace shardsim;

double bytes_option(const Args& args, const char* name, double fallback) {
  const auto v = args.get(name);
  if (!v) return fallback;
  try {
    const double b = parse_bytes(*v).value();
    if (b >= 1) return b;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("{}: expected a size such as 64KiB or 1GB; got \"{}\"", name, *v));
}

int int_option(const Args& args, const char* name, int fallback, int min, int max) {
  const auto v = args.get(name);
  if (!v) return fallback;
  try {
    std::size_t used = 0;
    const int n = std::stoi(*v, &used);
    if (used == v->size() && n >= min && n <= max) return n;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("{}: expected an integer {}..{}; got \"{}\"", name, min, max, *v));
}

std::string table(const validate::BenchResults& r) {
  std::string out;
  if (!r.collectives.empty()) {
    out += fmt::format("#{:>15} {:>6} {:>6} {:>14} {:>12} {:>10} {:>10}\n", "op", "link", "ranks", "size (B)", "time (us)", "algbw GB/s",
                       "busbw GB/s");
    for (const auto& c : r.collectives) {
      out += fmt::format(" {:>15} {:>6} {:>6} {:>14.0f} {:>12.2f} {:>10.2f} {:>10.2f}\n", graph::to_string(c.kind),
                         config::to_string(c.link), c.ranks, c.bytes, c.seconds * 1e6, c.algbw() / 1e9, c.busbw() / 1e9);
    }
  }
  for (const auto& g : r.gemms) {
    out += fmt::format(" gemm {:<11} {:>6} x {:>6} x {:>6}  {:>10.2f} us  {:>8.2f} TFLOPS\n", validate::label(g.precision), g.m, g.n, g.k,
                       g.seconds * 1e6, g.flops() / g.seconds / 1e12);
  }
  for (const auto& a : r.attention) {
    out += fmt::format(" attention {} seq {:>6}  {:>10.2f} us  {:>8.2f} TFLOPS\n", a.call.backward ? "bwd" : "fwd", a.call.seq,
                       a.seconds * 1e6, a.call.flops() / a.seconds / 1e12);
  }
  for (const auto& m : r.memory) {
    out += fmt::format(" copy traffic {:>14.0f} B  {:>10.2f} us  {:>8.1f} GB/s\n", m.bytes, m.seconds * 1e6, m.bytes / m.seconds / 1e9);
  }
  return out;
}

int bench(std::span<const std::string> argv) {
  Args args("shardsim-bench --backend nccl|cpu --out FILE [options]");
  args.value("--out", "FILE", "where to write the results (shardsim-bench JSON, for shardsim calibrate)");
  replay::declare_backend_options(args);
  args.value("--graph", "GRAPH.json", "benchmark this graph's GEMM shapes and attention calls (default: Llama 3.1 8B's)");
  args.value("--only", "KINDS", "comma-separated subset of collectives,gemm,attention,memory");
  args.flag("--fp8",
            "time every GEMM shape in float8 too (e4m3, tensorwise scales; GPUs of compute capability 8.9 and later), with fast "
            "and with precise accumulation: calibrate fits compute.gemm_fp8 and gemm_fp8_precise from them");
  args.value("--min-bytes", "SIZE", "smallest collective (default 1KiB)");
  args.value("--max-bytes", "SIZE", "largest collective (default 1GiB)");
  args.value("--min-copy", "SIZE", "smallest copy traffic (default 1MiB)");
  args.value("--max-copy", "SIZE", "largest copy traffic (default 1GiB)");
  args.value("--warmup", "N", "warm-up iterations per size (default 5)");
  args.value("--iters", "N", "timed iterations per size (default 20)");
  args.parse(argv);
  const auto out = args.get("--out");
  if (!out || !args.positional().empty()) throw UsageError("usage: shardsim-bench --backend nccl|cpu --out FILE\n" + args.help());
  const auto parent = std::filesystem::path(*out).parent_path();
  const replay::BackendChoice choice = replay::backend_choice(args, parent.empty() ? "." : parent.string());

  replay::BenchOptions o;
  if (const auto only = args.get("--only")) {
    o.collectives = o.gemm = o.attention = o.memory = false;
    std::string rest = *only + ",";
    for (std::size_t at = rest.find(','); at != std::string::npos; at = rest.find(',')) {
      const std::string k = rest.substr(0, at);
      rest.erase(0, at + 1);
      if (k == "collectives") {
        o.collectives = true;
      } else if (k == "gemm") {
        o.gemm = true;
      } else if (k == "attention") {
        o.attention = true;
      } else if (k == "memory") {
        o.memory = true;
      } else {
        throw UsageError(fmt::format("--only: expected collectives, gemm, attention or memory; got \"{}\"", k));
      }
    }
  }
  o.fp8 = args.has("--fp8");
  if (o.fp8 && !o.gemm) throw UsageError("--fp8 times GEMMs: --only leaves them out");
  o.min_bytes = bytes_option(args, "--min-bytes", o.min_bytes);
  o.max_bytes = bytes_option(args, "--max-bytes", o.max_bytes);
  o.min_copy = bytes_option(args, "--min-copy", o.min_copy);
  o.max_copy = bytes_option(args, "--max-copy", o.max_copy);
  if (o.min_bytes > o.max_bytes || o.min_copy > o.max_copy) throw UsageError("the smallest size is above the largest");
  o.warmup = int_option(args, "--warmup", o.warmup, 0, 1000);
  o.iters = int_option(args, "--iters", o.iters, 1, 100000);
  o.compute_scale = choice.scale.compute;
  o.bytes_scale = choice.scale.bytes;
  std::optional<graph::StepGraph> g;
  if (const auto file = args.get("--graph")) g = replay::load_graph(*file);
  o.graph = g ? &*g : nullptr;

  const replay::RankEnv env = replay::rank_env([](const char* n) { return std::getenv(n); });
  const int world = env.launcher != replay::Launcher::none ? env.world : replay::nprocs(args).value_or(1);
  if (o.collectives && world == 1 && args.get("--only")) throw UsageError("collectives need at least two ranks: --nprocs N");

  return replay::run_on_ranks(
      "shardsim-bench", choice, world, argv, [&](replay::Backend& b, replay::Watchdog& w, const replay::RankEnv& e) {
        replay::BenchOptions mine = o;
        mine.ranks_per_node = e.local_world;
        const validate::BenchResults r = replay::run_microbenchmarks(b, mine, w);
        if (b.rank() != 0) return 0;
        write_file_atomic(*out, validate::to_json(r).dump(1) + "\n");
        std::cout << fmt::format("# shardsim-bench: {} on {} rank(s)\n{}wrote {}\n", r.device, b.world(), table(r), *out);
        return 0;
      });
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return bench(args);
  } catch (const HelpRequested& e) {
    std::cout << e.what();
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "shardsim-bench: " << e.what() << "\n";
    return 2;
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "shardsim-bench: error: " << e.what() << "\n";
    return 1;
  }
}
