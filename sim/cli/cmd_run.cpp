// shardsim run SCENARIO [--set KEY=VALUE]... [--out DIR] [--json] [--trace FILE] [--gemms]
#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>

#include "cli/commands.hpp"
#include "cli/gemm_table.hpp"
#include "cli/pipeline.hpp"
#include "core/args.hpp"
#include "core/atomic_file.hpp"
#include "engine/collective.hpp"
#include "engine/compute_model.hpp"
#include "engine/scenario_run.hpp"
#include "engine/simulator.hpp"
#include "graph/serialize.hpp"
#include "graph/timeline_io.hpp"
#include "report/outputs.hpp"

namespace shardsim::cli {
namespace {

// Traces of thousands of ranks are unreadable and huge; the first ranks tell the story.
constexpr int kTraceRanks = 64;

Args run_args() {
  Args a("shardsim run SCENARIO [--set KEY=VALUE]... [--out DIR] [--json] [--trace FILE] [--gemms]");
  a.repeated("--set", "KEY=VALUE", "override a scenario key, e.g. fsdp.backward_prefetch=post");
  a.value("--out", "DIR", "write summary.json, trace.json, timeline.json, memory.csv and memory.svg into DIR");
  a.flag("--json", "print the summary as one JSON object instead of a table");
  a.value("--trace", "FILE", "write a Chrome/Perfetto trace of the simulated step(s)");
  a.flag("--gemms", "also list the step's GEMMs by shape: count, time and TFLOPS each as the compute model prices it, and which linears");
  return a;
}

}  // namespace

namespace {

// The files `run --out DIR` writes, in the order they are listed to the user.
constexpr std::array<std::string_view, 5> kRunOutputs{"summary.json", "trace.json", "timeline.json", "memory.csv", "memory.svg"};

std::vector<InputFile> inputs_of(const config::ScenarioConfig& s) {
  std::vector<InputFile> out;
  for (const auto& [path, role] : s.input_files()) out.push_back({path, role});
  return out;
}

// A directory to write into: created when absent; an existing file that is not a directory is a
// usage error, found before the run starts.
void check_out_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    throw UsageError(fmt::format("--out {}: is a file; expected a directory (created if absent)", dir.string()));
  }
}

void make_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw RuntimeError(fmt::format("{}: cannot create directory: {}", dir.string(), ec.message()));
}

}  // namespace

int cmd_run(std::span<const std::string> argv) {
  const auto started = Deadline::Clock::now();  // simulation.max_wall_time counts from here
  Args args = run_args();
  args.parse(argv);
  if (args.positional().size() != 1) throw UsageError("run expects one scenario file\n" + args.help());
  const std::filesystem::path file = args.positional().front();
  Prepared p = prepare(file, args.all("--set"), started);
  for (const auto& w : p.scenario.warnings) std::cerr << w.str() << "\n";
  // Refused before the run: an output over one of the run's own inputs.
  std::vector<OutputFile> outputs;
  if (auto trace = args.get("--trace")) outputs.push_back({"--trace", *trace});
  if (auto out = args.get("--out")) {
    check_out_dir(*out);
    for (auto name : kRunOutputs) outputs.push_back({fmt::format("--out {}:", *out), std::filesystem::path(*out) / name});
  }
  check_outputs(outputs, inputs_of(p.scenario));

  const Outcome outcome = simulate(p, started);
  const engine::SimulationResult& result = outcome.result;
  const report::Summary& summary = outcome.summary;

  std::vector<GemmRow> gemms;
  if (args.has("--gemms")) {
    gemms = gemm_table(p.graph, p.model, p.scenario, summary.busiest_stage, summary.reported_step, *engine::make_compute_model(p));
  }
  // The summary as JSON, with the GEMM table where asked for: printed with --json, summary.json in --out.
  nlohmann::json json = report::summary_json(summary);
  if (args.has("--gemms")) json["gemms"] = gemm_table_json(gemms);
  if (args.has("--json")) {
    std::cout << json.dump(2) << "\n";
  } else {
    std::cout << report::summary_text(summary, p.scenario);
    if (args.has("--gemms")) {
      const auto& mp = p.scenario.fsdp.mixed_precision;
      const config::DType compute = mp.enabled ? mp.param : p.scenario.training.dtype;
      std::cout << gemm_table_text(gemms, summary.busiest_stage, summary.pp_stages, config::to_string(compute));
    }
  }
  const auto& topology = p.scenario.cluster.topology;
  const report::IssueRules issue{topology.gpu.launch_queue, topology.host.kernel_dispatch.value()};
  // The trace goes to its file piece by piece; with both --trace and --out it is made once, as
  // text (a long pipelined step's takes seconds to make and most of a gigabyte to hold).
  const auto trace = [&](const TextWriter& write) {
    report::write_chrome_trace(p.graph, result.timeline, kTraceRanks, issue, &summary.memory, write);
  };
  std::string trace_text;
  if (args.has("--trace") && args.has("--out"))
    trace_text = report::chrome_trace(p.graph, result.timeline, kTraceRanks, issue, &summary.memory);
  if (auto path = args.get("--trace")) {
    if (args.has("--out")) {
      write_file_atomic(*path, trace_text);
    } else {
      write_file_atomic(*path, trace);
    }
  }
  if (auto out = args.get("--out")) {
    const std::filesystem::path dir = *out;
    make_dir(dir);
    // All five appear together or not at all: an interrupted run never leaves a new summary beside
    // an earlier run's trace. Each is written to its temporary name as it is made and then freed:
    // the trace and the timeline of a long pipelined step are gigabytes.
    OutputSet set;
    set.add(dir / "summary.json", json.dump(2) + "\n");
    if (args.has("--trace")) {
      set.add(dir / "trace.json", std::exchange(trace_text, {}));
    } else {
      set.add_written(dir / "trace.json", trace);
    }
    set.add_written(dir / "timeline.json", [&](const TextWriter& write) {
      graph::write_timeline(p.graph, result.timeline, {"simulated", "simgrid", ""},
                            graph::ranks_to_show(p.graph, result.timeline, kTraceRanks), write);
      write("\n");
    });
    set.add(dir / "memory.csv", report::memory_csv(summary.memory));
    set.add(dir / "memory.svg", report::memory_svg(summary.memory, summary.allocator_memory(),
                                                   fmt::format("{}: memory of rank {}", summary.scenario, summary.memory.rank)));
    set.commit();
    if (!args.has("--json"))
      std::cout << fmt::format("\nwrote {}/{{summary.json, trace.json, timeline.json, memory.csv, memory.svg}}\n", dir.string());
  }
  return 0;
}

int cmd_export(std::span<const std::string> argv) {
  Args args(
      "shardsim export SCENARIO [--set KEY=VALUE]... --out GRAPH.json\n  the step graph the replay harness runs (docs/graph-format.md)");
  args.repeated("--set", "KEY=VALUE", "override a scenario key");
  args.value("--out", "GRAPH.json", "where to write the step graph");
  args.parse(argv);
  if (args.positional().size() != 1) throw UsageError("export expects one scenario file\n" + args.help());
  const auto out = args.get("--out");
  if (!out) throw UsageError("export needs --out GRAPH.json\n" + args.help());
  Prepared p = prepare(args.positional().front(), args.all("--set"));
  for (const auto& w : p.scenario.warnings) std::cerr << w.str() << "\n";
  check_outputs({{"--out", *out}}, inputs_of(p.scenario));
  write_file_atomic(*out, [&](const TextWriter& write) {
    graph::write_json(p.graph, write);
    write("\n");
  });
  std::cout << fmt::format("wrote {} ({} ops, {} edges, {} ranks)\n", *out, p.graph.size(), p.graph.edge_count(), p.graph.info.world_size);
  return 0;
}

}  // namespace shardsim::cli
