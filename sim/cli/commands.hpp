// The subcommands of DESIGN.md's command line. Each returns the process exit code; errors are
// thrown (ConfigError -> 2, RuntimeError -> 1) and reported by main().
#pragma once

#include <span>
#include <string>

namespace shardsim::cli {

int cmd_run(std::span<const std::string> args);
int cmd_export(std::span<const std::string> args);
int cmd_check(std::span<const std::string> args);
int cmd_describe(std::span<const std::string> args);
int cmd_compare(std::span<const std::string> args);
int cmd_calibrate(std::span<const std::string> args);

}  // namespace shardsim::cli
