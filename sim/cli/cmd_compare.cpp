// shardsim compare SIMULATED MEASURED [--rank R] [--json] [--svg FILE] [--out DIR]
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "core/args.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/atomic_file.hpp"
#include "validate/compare.hpp"

namespace shardsim::cli {

int cmd_compare(std::span<const std::string> argv) {
  Args args;
  args.value("--rank", "R", "the rank to compare (default 0; a PyTorch profiler trace is compared as the rank it holds)");
  args.flag("--json", "print the comparison as one JSON object");
  args.value("--svg", "FILE", "draw the two timelines one above the other");
  args.value("--out", "DIR", "write compare.txt, compare.json and compare.svg into DIR");
  args.parse(argv);
  if (args.positional().size() != 2) {
    throw UsageError("compare expects two files: SIMULATED MEASURED (shardsim timelines, or a PyTorch profiler trace as MEASURED)\n" +
                     args.help());
  }
  std::vector<OutputFile> outputs;
  if (auto svg = args.get("--svg")) outputs.push_back({"--svg", *svg});
  if (auto out = args.get("--out")) {
    for (const char* name : {"compare.txt", "compare.json", "compare.svg"}) {
      outputs.push_back({fmt::format("--out {}:", *out), std::filesystem::path(*out) / name});
    }
  }
  check_outputs(outputs, {{args.positional()[0], "the simulated timeline"}, {args.positional()[1], "the measured timeline"}});
  const validate::Trace sim = validate::load_trace(args.positional()[0]);
  const validate::Trace meas = validate::load_trace(args.positional()[1]);
  int rank = meas.has_op_ids ? 0 : meas.first_rank;
  if (auto r = args.get("--rank")) {
    try {
      std::size_t used = 0;
      rank = std::stoi(*r, &used);
      if (used != r->size() || rank < 0) throw std::invalid_argument(*r);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("--rank: expected a rank (integer >= 0); got \"{}\"", *r));
    }
  }
  const validate::Comparison c = validate::compare(sim, meas, rank);
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
