// Golden figures, the way SimGrid's tesh files pin an example's output: every scenario in
// scenarios/ has tests/golden/expected/<name>.json with the figures `shardsim run --json` gave
// when the file was last accepted, and must give them again within the tolerance the file states.
// A change of the simulator that moves them shows here, figure by figure; when the move is
// intended (and explained in the commit), regenerate with
//   SHARDSIM_UPDATE_GOLDEN=1 ctest --test-dir build/release -R golden-figures
// These are regression figures, not independent ones: the independent checks are the unit
// tests' hand-worked numbers and `make validate`'s published runs.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "system_support.hpp"

using namespace shardsim::test;
namespace fs = std::filesystem;

namespace {

// The figures pinned: what a user reads, and the model as built.
const std::vector<std::string> kKeys{"/step_time_s",       "/tokens_per_s_per_gpu", "/tflops_per_gpu",       "/mfu",
                                     "/compute_s",         "/comm_s",               "/exposed_comm_s",       "/peak_memory_bytes",
                                     "/peak_allocated_bytes", "/world_size",        "/simulated_ranks",      "/oom",
                                     "/alloc_retries",     "/model/params_total",   "/model/flops_per_token"};
constexpr double kTolerance = 1e-6;  // relative: results are deterministic; this allows other compilers' rounding

}  // namespace

TEST_CASE("golden-figures: every example scenario gives its accepted figures") {
  const bool update = std::getenv("SHARDSIM_UPDATE_GOLDEN") != nullptr;
  const auto dir = scratch_dir("golden");
  int scenarios = 0;
  for (const auto& e : fs::directory_iterator(source_dir() / "scenarios")) {
    if (e.path().extension() != ".yaml") continue;
    ++scenarios;
    const std::string name = e.path().stem().string();
    INFO(name);
    const ProcessResult r = run_shardsim({"run", "scenarios/" + e.path().filename().string(), "--json"}, dir, 300);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const auto got = nlohmann::json::parse(r.out);
    const fs::path expected_file = source_dir() / "tests/golden/expected" / (name + ".json");
    if (update) {
      nlohmann::ordered_json out;
      out["scenario"] = "scenarios/" + e.path().filename().string();
      out["tolerance"] = kTolerance;
      for (const auto& k : kKeys) out["figures"][k] = got.at(nlohmann::json::json_pointer(k));
      std::ofstream(expected_file) << out.dump(2) << "\n";
      MESSAGE("updated " << expected_file.string());
      continue;
    }
    REQUIRE_MESSAGE(fs::exists(expected_file), "no golden figures for " << name << ": run with SHARDSIM_UPDATE_GOLDEN=1");
    const auto expected = nlohmann::json::parse(read_all(expected_file));
    const double tolerance = expected.at("tolerance").get<double>();
    for (const auto& [key, want] : expected.at("figures").items()) {
      INFO(key);
      const auto& have = got.at(nlohmann::json::json_pointer(key));
      if (want.is_number() && have.is_number()) {
        const double w = want.get<double>();
        const double h = have.get<double>();
        CHECK_MESSAGE(std::fabs(h - w) <= tolerance * std::max(std::fabs(w), 1e-12),
                      fmt::format("{}: {} now, {} accepted ({:+.6f} %)", key, h, w, w != 0 ? 100 * (h / w - 1) : 0.0));
      } else {
        CHECK(have == want);
      }
    }
  }
  CHECK(scenarios >= 3);
}
