// Every command answers --help (and -h) with its usage on stdout and exit code 0, whatever else
// is on its command line, and says nothing on stderr.
#include <doctest/doctest.h>

#include "system_support.hpp"

using namespace shardsim::test;

TEST_CASE("every subcommand answers --help with its usage on stdout, exit 0") {
  const auto dir = scratch_dir("help");
  for (const char* command : {"run", "export", "sweep", "tune", "compare", "calibrate", "check", "describe"}) {
    for (const char* flag : {"--help", "-h"}) {
      INFO(command << " " << flag);
      // A bad argument before the flag does not turn the request for help into an error.
      const ProcessResult r = run_shardsim({command, "--no-such-option", flag}, dir, 60);
      CHECK(r.exit_code == 0);
      CHECK(r.err.empty());
      CHECK(r.out.rfind(std::string("usage: shardsim ") + command, 0) == 0);
      CHECK(r.out.find("\noptions:\n") != std::string::npos);
      CHECK(r.out.find("--help, -h") != std::string::npos);
    }
  }
  const ProcessResult top = run_shardsim({"--help"}, dir, 60);
  CHECK(top.exit_code == 0);
  CHECK(top.out.rfind("usage: shardsim COMMAND", 0) == 0);
}

TEST_CASE("the replay harness's tools answer --help too") {
  const auto dir = scratch_dir("help-tools");
  const auto tools = shardsim_binary().parent_path().parent_path() / "validation";
  for (const char* tool : {"shardsim-replay", "shardsim-bench"}) {
    INFO(tool);
    const ProcessResult r = run_process({(tools / tool).string(), "--help"}, dir, dir / "io", std::chrono::seconds(60));
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind(std::string("usage: ") + tool, 0) == 0);
  }
}
