// A simulation that runs past its wall-time budget stops with a clear message and exit code 1,
// soon after the budget, and writes no output file.
#include <doctest/doctest.h>

#include "system_support.hpp"

using namespace shardsim::test;
namespace fs = std::filesystem;

TEST_CASE("a run past simulation.max_wall_time stops with exit code 1, names the budget and says how far it got") {
  const fs::path dir = scratch_dir("wall-time");
  // 70B on 1,024 GPUs in full mode with jitter (every rank draws its own times, so no two ranks
  // share a cohort) simulates for about 0.6 s in the release build on this machine, longer with
  // sanitizers; without jitter the ranks fall into a few cohorts and it finishes in 0.04 s, within
  // the budget. 20 ms stops it well before the end.
  const auto r = run_shardsim({"run", "scenarios/llama3.1-70b_1024xh100.yaml", "--set", "simulation.max_wall_time=20ms", "--set",
                               "simulation.mode=full", "--set", "stragglers.jitter=0.02", "--out", (dir / "out").string()},
                              dir, 60);
  INFO(r.err);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 1);
  CHECK(r.err.rfind("shardsim: error: the simulation ran past its wall-time budget (simulation.max_wall_time = 0.02 s): stopped after ",
                    0) == 0);
  // Where it stopped depends on the machine's speed: usually in the run, on a loaded or slow machine
  // before it (the budget counts from the start of the command and covers every phase).
  const bool in_run = r.err.find(" at simulated time ") != std::string::npos;
  const bool before_run = r.err.find(" while building the model") != std::string::npos ||
                          r.err.find(" while wrapping the model into FSDP units") != std::string::npos ||
                          r.err.find(" while building the step graph (") != std::string::npos ||
                          r.err.find(" while building routes,") != std::string::npos;
  const bool after_run = r.err.find(" while summarising the ") != std::string::npos;
  CHECK((in_run || before_run || after_run));
  // Once the engine runs, the message says how far it got: 654 ops x 1,024 ranks.
  if (in_run || r.err.find(" while building routes,") != std::string::npos)
    CHECK(r.err.find(" of 669696 op instances done (") != std::string::npos);
  CHECK(r.out.empty());
  CHECK_FALSE(fs::exists(dir / "out"));
}
