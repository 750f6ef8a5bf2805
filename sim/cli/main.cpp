// shardsim: simulate sharded (FSDP / ZeRO-3) training. Only main() catches errors and chooses
// the exit code: 0 success, 1 runtime failure, 2 bad input or usage.
#include <fmt/format.h>

#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "core/args.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/atomic_file.hpp"

namespace {

constexpr const char* kUsage =
    "usage: shardsim COMMAND [ARGS]\n"
    "  run SCENARIO [--set KEY=VALUE]... [--out DIR] [--json] [--trace FILE]\n"
    "  export SCENARIO [--set KEY=VALUE]... --out GRAPH.json\n"
    "  sweep SCENARIO|SWEEP.yaml --grid KEY=V1,V2,... [--grid ...] [-j N] [--shard I/N] --out DIR\n"
    "  tune SCENARIO [--memory-limit 70GiB] [-j N] [--out DIR]\n"
    "  compare SIMULATED MEASURED... [--rank R] [--steps A:B] [--warmup N] [--step N] [--topology FILE] [--json] [--svg FILE] [--out DIR]\n"
    "  calibrate MEASUREMENTS... --out CALIBRATION.yaml [--collective KIND] [--ranks N] [--nodes N] [--min-bytes SIZE] [--max-bytes SIZE]\n"
    "  check FILE... [--set KEY=VALUE]...\n"
    "  describe [scenario | topology | wrap | models | calibration | collectives | compute | sweep]\n"
    "shardsim COMMAND --help prints a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace shardsim;
  // Ctrl-C or a kill while an output file is written must not leave its temporary file behind.
  install_interrupt_cleanup();
  const std::vector<std::string> all(argv + 1, argv + argc);
  if (all.empty() || all.front() == "--help" || all.front() == "-h" || all.front() == "help") {
    std::cout << kUsage;
    return all.empty() ? 2 : 0;
  }
  if (all.front() == "--version") {
    std::cout << "shardsim " << SHARDSIM_VERSION << "\n";
    return 0;
  }
  const std::string command = all.front();
  const std::span<const std::string> rest(all.data() + 1, all.size() - 1);
  try {
    if (command == "run") return cli::cmd_run(rest);
    if (command == "export") return cli::cmd_export(rest);
    if (command == "check") return cli::cmd_check(rest);
    if (command == "sweep") return cli::cmd_sweep(rest);
    if (command == "tune") return cli::cmd_tune(rest);
    if (command == "describe") return cli::cmd_describe(rest);
    if (command == "compare") return cli::cmd_compare(rest);
    if (command == "calibrate") return cli::cmd_calibrate(rest);
    std::cerr << fmt::format("shardsim: unknown command \"{}\"\n{}", command, kUsage);
    return 2;
  } catch (const HelpRequested& e) {
    std::cout << e.what();
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "shardsim " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const RuntimeError& e) {
    std::cerr << "shardsim: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "shardsim: error: out of memory: the scenario needs more memory than this machine has; simulate fewer ranks, layers "
                 "or steps (simulation.max_op_instances bounds what the engine keeps)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "shardsim: internal error: " << e.what() << "\n";
    return 1;
  }
}
