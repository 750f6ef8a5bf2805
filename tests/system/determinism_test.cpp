// The same input gives byte-identical output: summary JSON, trace, memory CSV and SVG, the
// printed JSON and the exported graph, run to run. Runs of one scenario happen concurrently, as
// they would under a parallel sweep (each in its own process, as SimGrid requires).
#include <doctest/doctest.h>

#include <array>
#include <thread>

#include "system_support.hpp"

using namespace shardsim::test;
namespace fs = std::filesystem;

namespace {

// Runs `shardsim run SCENARIO ARGS --json --out DIR --trace DIR/extra_trace.json` three times, two
// of them at once, and checks that every output is identical.
void check_run_is_deterministic(const std::string& label, const std::vector<std::string>& args) {
  std::vector<fs::path> dirs;
  for (int i = 0; i < 3; ++i) dirs.push_back(scratch_dir(label + "-" + std::to_string(i)));
  auto run = [&](int i) {
    std::vector<std::string> a{"run"};
    a.insert(a.end(), args.begin(), args.end());
    a.insert(a.end(), {"--json", "--out", (dirs[i] / "out").string(), "--trace", (dirs[i] / "extra_trace.json").string()});
    return run_shardsim(a, dirs[i]);
  };
  const ProcessResult first = run(0);
  ProcessResult second;
  ProcessResult third;
  std::thread other([&] { third = run(2); });
  second = run(1);
  other.join();
  for (const ProcessResult* r : std::array<const ProcessResult*, 3>{&first, &second, &third}) {
    INFO(r->err);
    REQUIRE(r->exit_code == 0);
  }
  CHECK(first.out == second.out);
  CHECK(first.out == third.out);
  CHECK(nlohmann::json::accept(first.out));
  for (const std::string f : {"out/summary.json", "out/trace.json", "out/memory.csv", "out/memory.svg", "extra_trace.json"}) {
    INFO(label << ": " << f);
    const std::string a = read_all(dirs[0] / f);
    CHECK(!a.empty());
    CHECK(a == read_all(dirs[1] / f));
    CHECK(a == read_all(dirs[2] / f));
  }
}

}  // namespace

TEST_CASE("run: the default scenario gives byte-identical outputs run to run") {
  check_run_is_deterministic("d1", {"scenarios/llama3.1-8b_8xh100.yaml"});
}

TEST_CASE("run: 70B on 2 nodes (inter-node flows sharing links) gives byte-identical outputs run to run") {
  check_run_is_deterministic("70b", {"scenarios/llama3.1-70b_1024xh100.yaml", "--set", "cluster.nodes=2"});
}

TEST_CASE("run: hybrid sharding, FSDP1 limiter, micro-steps and several steps give byte-identical outputs run to run") {
  check_run_is_deterministic("hybrid",
                             {"tests/data/tiny_llama.yaml", "--set", "cluster.nodes=4", "--set", "fsdp.sharding=hybrid_shard", "--set",
                              "training.grad_accum=3", "--set", "simulation.steps=2", "--set", "fsdp.backward_prefetch=post"});
}

TEST_CASE("export: the step graph is byte-identical run to run") {
  std::vector<std::string> graphs;
  for (int i = 0; i < 2; ++i) {
    const fs::path dir = scratch_dir("export-" + std::to_string(i));
    const auto r = run_shardsim({"export", "scenarios/llama3.1-70b_1024xh100.yaml", "--out", (dir / "graph.json").string()}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    graphs.push_back(read_all(dir / "graph.json"));
  }
  CHECK(!graphs[0].empty());
  CHECK(graphs[0] == graphs[1]);
}
