// shardsim calibrate MEASUREMENTS... --out CALIBRATION.yaml [--name NAME]
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/args.hpp"
#include "cli/commands.hpp"
#include "config/calibration.hpp"
#include "core/error.hpp"
#include "core/atomic_file.hpp"
#include "validate/calibrate.hpp"

namespace shardsim::cli {
namespace {

validate::BenchResults read_bench(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(Location{file, 0, 0}, "", "cannot open for reading");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(Location{file, 0, 0}, "", fmt::format("not valid JSON (byte {}): expected a shardsim-bench file", e.byte));
  }
  return validate::bench_from_json(j, file);
}

}  // namespace

int cmd_calibrate(std::span<const std::string> argv) {
  Args args;
  args.value("--out", "CALIBRATION.yaml", "where to write the calibration (a scenario loads it with `calibration: FILE`)");
  args.value("--name", "NAME", "what was measured (default: the device named in the measurements)");
  args.parse(argv);
  if (args.positional().empty())
    throw UsageError("calibrate expects one or more shardsim-bench files (shardsim-bench --out FILE)\n" + args.help());
  const auto out = args.get("--out");
  if (!out) throw UsageError("calibrate needs --out CALIBRATION.yaml\n" + args.help());
  std::vector<InputFile> inputs;
  for (const auto& f : args.positional()) inputs.push_back({f, "a measurement file"});
  check_outputs({{"--out", *out}}, inputs);
  validate::BenchResults all;
  for (const auto& f : args.positional()) {
    const validate::BenchResults b = read_bench(f);
    if (all.backend.empty()) {
      all.backend = b.backend;
      all.device = b.device;
    } else if (b.backend != all.backend || b.device != all.device) {
      throw ConfigError(Location{f, 0, 0}, "device",
                        fmt::format("measured on {} ({}); expected every file from the same device as the first, {} ({})", b.device,
                                    b.backend, all.device, all.backend));
    }
    all.append(b);
  }
  const validate::CalibrationFit fit = validate::fit_calibration(all);
  const std::string name = args.get("--name").value_or(fmt::format("{} ({})", all.device, all.backend));
  write_file_atomic(*out, validate::calibration_yaml(fit, name, args.positional()));
  // What we wrote must load: a scenario will read it.
  (void)config::load_calibration(*out);
  std::cout << fmt::format("calibration of {}:\n{}wrote {}\n", name, validate::residuals_text(fit), *out);
  return 0;
}

}  // namespace shardsim::cli
