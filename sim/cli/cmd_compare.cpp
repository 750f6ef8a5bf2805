// shardsim compare SIMULATED MEASURED... [--rank R] [--steps A:B] [--warmup N] [--step N]
//                  [--topology FILE] [--json] [--svg FILE] [--out DIR]
#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <iostream>
#include <set>

#include "core/args.hpp"
#include "cli/commands.hpp"
#include "cli/pipeline.hpp"
#include "config/topology.hpp"
#include "core/error.hpp"
#include "core/atomic_file.hpp"
#include "engine/collectives/collectives.hpp"
#include "engine/scenario_run.hpp"
#include "validate/compare.hpp"

namespace shardsim::cli {
namespace {

std::optional<int> parse_int(const std::string& text) {
  int v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

int non_negative(const Args& args, const char* option, const char* what) {
  const std::string text = *args.get(option);
  const auto v = parse_int(text);
  if (!v || *v < 0) throw UsageError(fmt::format("{}: expected {} (an integer >= 0); got \"{}\"", option, what, text));
  return *v;
}

// "--steps A:B", either end open ("5:", ":7"), or one step "5".
void parse_steps(const std::string& text, validate::StepFilter& f) {
  const auto colon = text.find(':');
  const std::string a = colon == std::string::npos ? text : text.substr(0, colon);
  const std::string b = colon == std::string::npos ? text : text.substr(colon + 1);
  auto bound = [&](const std::string& s) -> std::optional<int> {
    if (s.empty()) return std::nullopt;
    const auto v = parse_int(s);
    if (!v || *v < 0) throw UsageError(fmt::format("--steps: expected A:B with step numbers (A:, :B and A work too); got \"{}\"", text));
    return v;
  };
  f.first = bound(a);
  f.last = bound(b);
  if (colon == std::string::npos && !f.first) throw UsageError("--steps: expected A:B with step numbers; got an empty value");
  if (f.first && f.last && *f.first > *f.last) {
    throw UsageError(fmt::format("--steps {}: the first step is after the last; expected A <= B", text));
  }
}

// Prices a recorded collective with the topology's NCCL model (the tuner's choice), its group
// placed on consecutive nodes when its ranks are not recorded.
validate::CollectivePredictor predictor(const config::TopologyConfig& topo) {
  config::CollectivesConfig tuner;  // NCCL's own choice of algorithm and protocol for each collective and size
  tuner.all_gather.name = tuner.reduce_scatter.name = tuner.all_reduce.name = tuner.protocol.name = "auto";
  auto collectives = std::make_shared<engine::collectives::Collectives>(engine::make_collectives(tuner, topo));
  return [collectives](const validate::Collective& c) -> std::optional<double> {
    const auto kind = validate::collective_kind(c.cls);
    if (!kind) return std::nullopt;  // the engine models all-gather, reduce-scatter and all-reduce
    std::vector<int> ranks = c.group_ranks;
    if (static_cast<int>(ranks.size()) != c.group_size) {
      ranks.clear();
      for (int r = 0; r < c.group_size; ++r) ranks.push_back(r);
    }
    if (ranks.size() < 2 || c.bytes <= 0) return std::nullopt;
    return collectives->select(*kind, ranks, c.bytes).time();
  };
}

}  // namespace

int cmd_compare(std::span<const std::string> argv) {
  Args args(
      "shardsim compare SIMULATED MEASURED... [options]\n  SIMULATED: a shardsim timeline (run --out DIR: timeline.json); MEASURED: a "
      "timeline (shardsim-replay), or PyTorch profiler traces (.json, .json.gz, several files or a directory of per-rank traces)");
  args.value("--rank", "R", "the rank to compare (default: the measured trace's rank, or 0)");
  args.value("--steps", "A:B", "keep the measured steps numbered A..B (ProfilerStep#N's N; 1, 2, ... otherwise)");
  args.value("--warmup", "N", "leave out the first N measured steps found (default 0)");
  args.value("--step", "N", "the measured step to draw (default: the one closest to the median step time)");
  args.value("--topology", "FILE", "price each measured collective with this topology's NCCL model, beside its measured bandwidth");
  args.flag("--json", "print the comparison as one JSON object");
  args.value("--svg", "FILE", "draw the two timelines one above the other");
  args.value("--out", "DIR", "write compare.txt, compare.json and compare.svg into DIR");
  args.parse(argv);
  if (args.positional().size() < 2) {
    throw UsageError(
        "compare expects SIMULATED MEASURED...: a shardsim timeline, then a timeline or PyTorch profiler traces (files or a directory "
        "of per-rank traces, .json or .json.gz)\n" +
        args.help());
  }
  validate::TraceRequest measured_request;
  for (std::size_t i = 1; i < args.positional().size(); ++i) measured_request.paths.emplace_back(args.positional()[i]);
  if (args.has("--rank")) measured_request.rank = non_negative(args, "--rank", "a rank");
  if (args.has("--warmup")) measured_request.steps.warmup = non_negative(args, "--warmup", "a number of steps");
  if (auto s = args.get("--steps")) parse_steps(*s, measured_request.steps);
  validate::CompareOptions options;
  if (args.has("--step")) options.step = non_negative(args, "--step", "a step number");
  if (auto topo = args.get("--topology")) options.predict = predictor(config::load_topology(*topo, ConfigNode{}, ""));

  // Refused before reading: an output over one of the inputs (a trace inside a given directory too).
  std::vector<OutputFile> outputs;
  if (auto svg = args.get("--svg")) outputs.push_back({"--svg", *svg});
  if (auto out = args.get("--out")) {
    for (const char* name : {"compare.txt", "compare.json", "compare.svg"}) {
      outputs.push_back({fmt::format("--out {}:", *out), std::filesystem::path(*out) / name});
    }
  }
  std::vector<InputFile> inputs{{args.positional()[0], "the simulated timeline"}};
  for (const auto& path : measured_request.paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(path, ec)) inputs.push_back({e.path(), "a measured trace"});
    } else {
      inputs.push_back({path, "a measured trace"});
    }
  }
  check_outputs(outputs, inputs);
  const validate::Trace sim = validate::load_trace(args.positional()[0]);
  const validate::Trace meas = validate::load_trace(measured_request);
  options.rank = measured_request.rank.value_or(meas.has_op_ids || meas.ranks.empty() ? 0 : meas.ranks.front().rank);
  const validate::Comparison c = validate::compare(sim, meas, options);
  const std::string text = validate::comparison_text(c);
  const nlohmann::json json = validate::comparison_json(c);
  std::cout << (args.has("--json") ? json.dump(2) + "\n" : text);
  if (auto svg = args.get("--svg")) write_file_atomic(*svg, validate::comparison_svg(sim, meas, c));
  if (auto out = args.get("--out")) {
    const std::filesystem::path dir = *out;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw RuntimeError(fmt::format("{}: cannot create directory: {}", dir.string(), ec.message()));
    OutputSet set;
    set.add(dir / "compare.txt", text);
    set.add(dir / "compare.json", json.dump(2) + "\n");
    set.add(dir / "compare.svg", validate::comparison_svg(sim, meas, c));
    set.commit();
  }
  return 0;
}

}  // namespace shardsim::cli
