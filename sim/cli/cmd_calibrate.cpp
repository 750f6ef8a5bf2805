// shardsim calibrate MEASUREMENTS... --out CALIBRATION.yaml [--name NAME] [--collective KIND]
//                    [--ranks N] [--nodes N] [--min-bytes SIZE] [--max-bytes SIZE]
// MEASUREMENTS: shardsim-bench JSON files, nccl-tests logs as they are printed, or PyTorch profiler
// traces (.json / .json.gz, recorded with record_shapes=True) for GEMM and attention timings.
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/gemm_check.hpp"
#include "config/calibration.hpp"
#include "config/topology.hpp"
#include "core/args.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/units.hpp"
#include "validate/calibrate.hpp"
#include "validate/cpu_dispatch.hpp"
#include "validate/kernel_samples.hpp"
#include "validate/kineto_events.hpp"
#include "validate/nccl_tests.hpp"
#include "validate/text_input.hpp"

namespace shardsim::cli {
namespace {

std::string read_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(Location{file, 0, 0}, "", "cannot open for reading");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A Kineto trace (gzipped or not): an object with "traceEvents" near its start (after
// deviceProperties and distributedInfo; a shardsim-bench file never has the key), or a bare array
// of event objects (Chrome's JSON array format). A log whose lines start "[rank0]:" is neither.
bool looks_like_trace(const std::string& file) {
  validate::TextInput in(file);
  std::string head;  // the text without white space, up to 1 MiB
  for (int c = in.get(); c >= 0 && head.size() < (1U << 20); c = in.get()) {
    if (std::isspace(c) != 0) continue;
    head += static_cast<char>(c);
    if (head.size() == 1 && c != '{' && c != '[') return false;
    if (head.size() == 2 && head[0] == '[') return c == '{' || c == ']';
  }
  return head.starts_with("{") && head.find("\"traceEvents\"") != std::string::npos;
}

validate::BenchResults trace_samples(const std::string& file, std::string& summary) {
  const auto parsed = validate::read_trace_file(file);
  auto s = validate::kernel_samples(parsed.kineto);
  int backward = 0;
  for (const auto& a : s.bench.attention) backward += a.call.backward ? 1 : 0;
  summary += fmt::format("  {}: PyTorch profiler trace{}, {} GEMM samples, {} attention samples ({} forward, {} backward)\n", file,
                         s.bench.device.empty() ? "" : fmt::format(" ({})", s.bench.device), s.bench.gemms.size(), s.bench.attention.size(),
                         static_cast<int>(s.bench.attention.size()) - backward, backward);
  for (const auto& n : s.notes) summary += fmt::format("    note: {}\n", n.substr(file.size() + 2));
  if (const auto cpu = validate::cpu_dispatch(parsed.kineto)) summary += fmt::format("    CPU: {}\n", validate::describe(*cpu));
  return std::move(s.bench);
}

validate::BenchResults read_bench(const std::string& file, const std::string& text) {
  return validate::bench_from_json(parse_json(text, file, "a shardsim-bench file (shardsim-bench --out FILE)"), file);
}

std::optional<int> positive_int(const Args& args, const char* option) {
  const auto v = args.get(option);
  if (!v) return std::nullopt;
  int n = 0;
  const auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || p != v->data() + v->size() || n < 1) {
    throw UsageError(fmt::format("{}: expected an integer >= 1; got \"{}\"", option, *v));
  }
  return n;
}

double bytes_option(const Args& args, const char* option, double fallback) {
  const auto v = args.get(option);
  if (!v) return fallback;
  try {
    return parse_quantity(*v, Dimension::bytes);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("{}: {}", option, e.what()));
  }
}

validate::NcclTestsHints hints_of(const Args& args) {
  validate::NcclTestsHints h;
  if (auto c = args.get("--collective")) {
    static const std::map<std::string, validate::ActivityClass, std::less<>> kinds{
        {"all_reduce", validate::ActivityClass::all_reduce},
        {"all_gather", validate::ActivityClass::all_gather},
        {"reduce_scatter", validate::ActivityClass::reduce_scatter},
        {"all_to_all", validate::ActivityClass::all_to_all}};
    const auto it = kinds.find(*c);
    if (it == kinds.end()) {
      throw UsageError(fmt::format("--collective: expected one of all_reduce, all_gather, reduce_scatter, all_to_all; got \"{}\"", *c));
    }
    h.collective = it->second;
  }
  h.ranks = positive_int(args, "--ranks");
  h.nodes = positive_int(args, "--nodes");
  return h;
}

// The samples of an nccl-tests log: out of place and in place, one each per size.
validate::BenchResults samples_of(const validate::NcclTestsLog& log, std::string& summary) {
  validate::BenchResults b;
  b.backend = "nccl-tests";
  b.device = log.device;
  summary +=
      fmt::format("  {}: {} (by {}), {} ranks (by {}) on {} node{} (by {}), {} sizes {}..{}\n", log.file,
                  validate::to_string(log.collective), log.collective_from, log.ranks, log.ranks_from, log.nodes, log.nodes == 1 ? "" : "s",
                  log.nodes_from, log.rows.size(), format_bytes(Bytes(log.rows.front().bytes)), format_bytes(Bytes(log.rows.back().bytes)));
  for (const auto& n : log.notes) summary += fmt::format("    note: {}\n", n);
  const auto collective = validate::collective_kind(log.collective);
  if (!collective) {
    summary += "    not fitted: the simulator's step graphs have no all-to-all to price\n";
    return b;
  }
  const graph::OpKind kind = *collective;
  const auto link = log.nodes == 1 ? config::LinkClass::nvlink : config::LinkClass::nic;
  for (const auto& r : log.rows) {
    b.collectives.push_back(validate::CollectiveSample{kind, link, log.ranks, log.ranks / log.nodes, r.bytes, r.time_oop});
    if (r.time_ip > 0)
      b.collectives.push_back(validate::CollectiveSample{kind, link, log.ranks, log.ranks / log.nodes, r.bytes, r.time_ip});
  }
  return b;
}

}  // namespace

int cmd_calibrate(std::span<const std::string> argv) {
  Args args(
      "shardsim calibrate MEASUREMENTS... --out CALIBRATION.yaml [options]\n  MEASUREMENTS: shardsim-bench JSON files, nccl-tests logs as "
      "they are printed, or PyTorch profiler traces (.json, .json.gz) recorded with record_shapes=True (GEMM and attention timings)");
  args.value("--out", "CALIBRATION.yaml", "where to write the calibration (a scenario loads it with `calibration: FILE`)");
  args.value("--name", "NAME", "what was measured (default: the device named in the measurements)");
  args.value("--collective", "KIND",
             "nccl-tests logs: all_reduce | all_gather | reduce_scatter | all_to_all (default: from the log or its name)");
  args.value("--ranks", "N", "nccl-tests logs without \"#  Rank\" lines: how many ranks ran (default: from busbw / algbw)");
  args.value("--nodes", "N", "nccl-tests logs without \"#  Rank ... on HOST\" lines: how many nodes they ran on");
  args.value("--min-bytes", "SIZE", "fit collective sizes from this one up (e.g. 1MiB)");
  args.value("--max-bytes", "SIZE", "fit collective sizes up to this one");
  args.value("--topology", "FILE",
             "also print each measured GEMM beside this topology's nominal compute model, and the float8 speed-up of shapes "
             "timed in both dtypes (shardsim-bench --fp8) beside the model's");
  args.parse(argv);
  if (args.positional().empty()) {
    throw UsageError("calibrate expects one or more measurement files: shardsim-bench JSON, nccl-tests logs or PyTorch profiler traces\n" +
                     args.help());
  }
  const auto out = args.get("--out");
  if (!out) throw UsageError("calibrate needs --out CALIBRATION.yaml\n" + args.help());
  std::vector<InputFile> inputs;
  for (const auto& f : args.positional()) inputs.push_back({f, "a measurement file"});
  const auto topology_file = args.get("--topology");
  if (topology_file) inputs.push_back({*topology_file, "a topology"});
  std::optional<config::TopologyConfig> topology;  // read before anything is written: a bad file fails first
  if (topology_file) topology = config::load_topology(*topology_file, ConfigNode{}, "");
  check_outputs({{"--out", *out}}, inputs);
  validate::FitOptions options;
  options.min_bytes = bytes_option(args, "--min-bytes", 0.0);
  options.max_bytes = bytes_option(args, "--max-bytes", options.max_bytes);
  if (options.min_bytes > options.max_bytes) throw UsageError("--min-bytes is above --max-bytes; expected a range of sizes");
  const validate::NcclTestsHints hints = hints_of(args);

  validate::BenchResults all;
  std::string read;
  std::string first_file;
  for (const auto& f : args.positional()) {
    validate::BenchResults b;
    if (looks_like_trace(f)) {
      b = trace_samples(f, read);
    } else {
      const std::string text = read_text(f);
      const auto first = text.find_first_not_of(" \t\r\n");
      if (first != std::string::npos && text[first] == '{') {
        b = read_bench(f, text);
        read += fmt::format("  {}: shardsim-bench, {} collective samples\n", f, b.collectives.size());
      } else if (validate::looks_like_nccl_tests(text)) {
        b = samples_of(validate::parse_nccl_tests(text, f, hints), read);
      } else {
        throw ConfigError(Location{f, 0, 0}, "",
                          "neither nccl-tests output (no row of size, count, type, time, algbw, busbw), a PyTorch profiler trace nor a "
                          "shardsim-bench JSON file; expected the output of all_reduce_perf, all_gather_perf, reduce_scatter_perf or "
                          "alltoall_perf, a trace from torch.profiler, or shardsim-bench --out");
      }
    }
    if (first_file.empty()) {
      first_file = f;
      all.backend = b.backend;
      all.device = b.device;
    } else if (!b.device.empty() && !all.device.empty() && b.device != all.device) {
      throw ConfigError(Location{f, 0, 0}, "device",
                        fmt::format("measured on {} ({}); expected every file from the same device as {}, {} ({})", b.device, b.backend,
                                    first_file, all.device, all.backend));
    } else if (all.device.empty()) {
      all.device = b.device;
    }
    all.append(b);
  }
  if (all.collectives.empty() && all.gemms.empty() && all.attention.empty() && all.memory.empty()) {
    throw ConfigError(Location{first_file, 0, 0}, "", "nothing to calibrate; expected collective, GEMM, attention or memory measurements");
  }
  const validate::CalibrationFit fit = validate::fit_calibration(all, options);
  const std::string device = all.device.empty() ? std::string("unnamed device") : all.device;
  const std::string name = args.get("--name").value_or(fmt::format("{} ({})", device, all.backend));
  write_file_atomic(*out, validate::calibration_yaml(fit, name, args.positional()));
  // What we wrote must load: a scenario will read it.
  (void)config::load_calibration(*out);
  std::cout << fmt::format("read:\n{}calibration of {}:\n{}wrote {}\n", read, name, validate::residuals_text(fit), *out);
  if (topology && !all.gemms.empty()) std::cout << gemm_check_text(check_gemms(all, *topology), *topology);
  return 0;
}

}  // namespace shardsim::cli
