// `shardsim sweep` and `shardsim tune` end to end: the real binary, real simulations of small
// scenarios, killed and resumed, cross-checked against `shardsim run`.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "config/yaml_load.hpp"
#include "sweep/grid.hpp"
#include "sweep/result.hpp"
#include "test_support.hpp"
#include "xml_check.hpp"

using namespace shardsim;
namespace fs = std::filesystem;

namespace {

struct Ran {
  int code = -1;
  std::string out, err;
};

fs::path scratch(const std::string& name) {
  const auto d = fs::temp_directory_path() / ("shardsim-cli-test-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  return d;
}

std::string slurp(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts shardsim with `args`, its output going to files next to `base`.
pid_t spawn(const std::vector<std::string>& args, const fs::path& base) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open((base.string() + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open((base.string() + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    std::vector<std::string> all{test::shardsim_binary().string()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

Ran finish(pid_t pid, const fs::path& base) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  Ran r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(base.string() + ".out");
  r.err = slurp(base.string() + ".err");
  fs::remove(base.string() + ".out");
  fs::remove(base.string() + ".err");
  return r;
}

Ran run_shardsim(const std::vector<std::string>& args, const std::string& name) {
  const auto base = fs::temp_directory_path() / ("shardsim-cli-test-" + std::to_string(::getpid()) + "-" + name);
  return finish(spawn(args, base), base);
}

std::string tiny() {
  return (test::source_dir() / "tests/data/tiny_llama.yaml").string();
}

std::size_t lines_in(const fs::path& f) {
  const std::string s = slurp(f);
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST_CASE("shardsim sweep of the tiny scenario gives 4 points equal to shardsim run of the same settings and its pictures") {
  const auto dir = scratch("tiny");
  const auto r = run_shardsim({"sweep", tiny(), "--set", "fsdp.wrap={policy: module}", "--grid", "fsdp.backward_prefetch=pre,none",
                               "--grid", "fsdp.wrap.blocks_per_unit=1,2", "-j", "2", "--out", dir.string()},
                              "tiny");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto rows = sweep::read_jsonl(dir / "results.jsonl").rows;
  REQUIRE(rows.size() == 4);
  CHECK(rows[3].assignments == std::vector<std::string>{"fsdp.backward_prefetch=none", "fsdp.wrap.blocks_per_unit=2"});
  const auto single = run_shardsim({"run", tiny(), "--set", "fsdp.wrap={policy: module}", "--set", "fsdp.backward_prefetch=none", "--set",
                                    "fsdp.wrap.blocks_per_unit=2", "--json"},
                                   "tiny-run");
  REQUIRE(single.code == 0);
  const auto json = nlohmann::json::parse(single.out);
  CHECK(rows[3].number("step_time_s") == json["step_time_s"].get<double>());
  CHECK(rows[3].number("peak_memory_bytes") == json["peak_memory_bytes"].get<double>());
  const auto heat = test::check_xml(slurp(dir / "heatmap.svg"));
  REQUIRE_MESSAGE(heat.well_formed, heat.error);
  CHECK(heat.count_class("rect.cell") == 4);
  const auto pareto = test::check_xml(slurp(dir / "pareto.svg"));
  REQUIRE_MESSAGE(pareto.well_formed, pareto.error);
  CHECK(pareto.count_class("circle.point") == 4);
  CHECK(slurp(dir / "index.html").find("Best settings") != std::string::npos);
  CHECK(r.out.find("sweep: 4 points (4 run now, 0 from earlier runs): 4 fit, 0 out of memory, 0 failed; -j 2") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("shardsim sweep killed mid-way and run again ends with the files of an uninterrupted sweep and runs no finished point again") {
  // 48 points of a 64-GPU scenario at -j 1: long enough to be killed after a few points.
  const std::vector<std::string> grid{"--set",  "cluster.nodes=8",
                                      "--grid", "fsdp.wrap.blocks_per_unit=1,2,4,8",
                                      "--grid", "training.micro_batch=1,2,3,4",
                                      "--grid", "training.activation_checkpointing=none,selective,full",
                                      "-j",     "1"};
  auto args_for = [&](const fs::path& out) {
    std::vector<std::string> a{"sweep", (test::source_dir() / "scenarios/llama3.1-8b_8xh100.yaml").string()};
    a.insert(a.end(), grid.begin(), grid.end());
    a.insert(a.end(), {"--out", out.string()});
    return a;
  };
  const auto dir = scratch("killed");
  const auto base = fs::temp_directory_path() / ("shardsim-cli-test-" + std::to_string(::getpid()) + "-killed-run");
  const pid_t pid = spawn(args_for(dir), base);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (lines_in(dir / "results.jsonl") < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(pid, SIGKILL);
  (void)finish(pid, base);
  std::set<std::vector<std::string>> done;
  for (const auto& row : sweep::read_jsonl(dir / "results.jsonl").rows) done.insert(row.assignments);
  REQUIRE(done.size() >= 3);
  REQUIRE(done.size() < 48);

  const auto again = run_shardsim(args_for(dir), "killed-again");
  REQUIRE_MESSAGE(again.code == 0, again.err);
  CHECK(again.err.find(fmt::format("sweep: {} points to run ({} already done)", 48 - done.size(), done.size())) != std::string::npos);
  for (const auto& d : done) {
    std::string settings;
    for (const auto& a : d) settings += (settings.empty() ? "" : " ") + a;
    CHECK_MESSAGE(again.err.find("] " + settings + ":") == std::string::npos, settings << " ran again");
  }
  const auto clean = scratch("uninterrupted");
  REQUIRE(run_shardsim(args_for(clean), "uninterrupted").code == 0);
  CHECK(slurp(dir / "results.jsonl") == slurp(clean / "results.jsonl"));
  CHECK(slurp(dir / "results.csv") == slurp(clean / "results.csv"));
  fs::remove_all(dir);
  fs::remove_all(clean);
}

TEST_CASE("a typo in a --grid key stops the sweep before anything runs and names the --grid option") {
  const auto dir = scratch("typo");
  const auto r = run_shardsim({"sweep", tiny(), "--grid", "fsdp.backward_prefech=pre,post", "--out", dir.string()}, "typo");
  CHECK(r.code == 2);
  CHECK(r.err ==
        "--grid fsdp.backward_prefech=pre,post: error: fsdp.backward_prefech: unknown key in fsdp settings (did you mean "
        "\"backward_prefetch\"?)\n");
  CHECK(!fs::exists(dir));
  const auto bad = run_shardsim({"sweep", tiny(), "--grid", "fsdp.backward_prefetch=pre,befor", "--out", dir.string()}, "typo2");
  CHECK(bad.code == 2);
  CHECK(bad.err.rfind("--grid fsdp.backward_prefetch=pre,befor: error: fsdp.backward_prefetch: expected one of pre, post, none", 0) == 0);
  CHECK(run_shardsim({"sweep", tiny(), "--out", dir.string()}, "nogrid").code == 2);
  CHECK(run_shardsim({"sweep", tiny(), "--grid", "cluster.nodes=1,2", "--out", dir.string(), "--shard", "2/2"}, "badshard").code == 2);
}

TEST_CASE("shardsim tune prints YAML whose settings simulate to the throughput it reports and at least the scenario's") {
  // Peaks of the searched settings range from about 190 to 355 MiB (64 MiB of them the two cuBLAS
  // workspaces): 224 MiB rules some out.
  const auto r = run_shardsim({"tune", tiny(), "--memory-limit", "224MiB", "-j", "2"}, "tune");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto yaml = config::parse_yaml(r.out, Location{"tune output", 0, 0});
  std::vector<std::string> run_args{"run", tiny(), "--json"};
  REQUIRE(yaml.is_map());
  for (const auto& section : yaml.entries) {
    for (const auto& e : section.value.entries)
      run_args.insert(run_args.end(), {"--set", section.key + "." + e.key + "=" + sweep::to_flow_yaml(e.value)});
  }
  CHECK(run_args.size() > 3);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex("# best: ([0-9]+) tokens/s per GPU")));
  const auto best = nlohmann::json::parse(run_shardsim(run_args, "tune-best").out);
  CHECK(best["tokens_per_s_per_gpu"].get<double>() == doctest::Approx(std::stod(m[1])).epsilon(1e-3).scale(0));
  CHECK(best["peak_memory_bytes"].get<double>() <= 224.0 * 1024 * 1024);
  const auto as_written = nlohmann::json::parse(run_shardsim({"run", tiny(), "--json"}, "tune-base").out);
  CHECK(best["tokens_per_s_per_gpu"].get<double>() >= as_written["tokens_per_s_per_gpu"].get<double>());
}

TEST_CASE("shardsim tune with a limit nothing fits under says so and exits 1") {
  const auto r = run_shardsim({"tune", tiny(), "--memory-limit", "1MiB", "-j", "2"}, "tune-none");
  CHECK(r.code == 1);
  CHECK(r.err.find("shardsim: error: no configuration fits in 1.0 MiB; the smallest peak was") != std::string::npos);
  // Stage 1: 3 checkpointing modes and the scenario as written; none fits, nor could: each one's
  // activations alone are more than 1 MiB, so stage 2 has nothing to search.
  CHECK(r.out.find("# stage 2: fsdp.sharding (4) x fsdp.wrap (4) for none: nothing fits, or could with less sharded state: 0 "
                   "configurations\n#   4 that do not fit left out: their activations, logits and workspaces alone exceed the limit") !=
        std::string::npos);
  CHECK(r.out.find("# simulated 4 configurations") != std::string::npos);
  // --exhaustive: the product in stage 1, 3 x 1 x 4 x 4 and the scenario as written, no stage 2.
  const auto all = run_shardsim({"tune", tiny(), "--memory-limit", "1MiB", "--exhaustive", "-j", "2"}, "tune-none-exhaustive");
  CHECK(all.code == 1);
  CHECK(all.out.find("x fsdp.sharding (4) x fsdp.wrap (4) = 48 configurations, and the scenario as written") != std::string::npos);
  CHECK(all.out.find("# stage 2: fsdp.sharding") == std::string::npos);
  CHECK(all.out.find("# simulated 49 configurations") != std::string::npos);
}

TEST_CASE("shardsim tune says which pipelined layouts it did not search as deeper than the model") {
  // The tiny Llama's 4 blocks at pp 2 and 4, 1F1B and interleaved 1F1B (two model stages a rank):
  // pp 4 interleaved would be 8 stages, so 3 layouts are searched, 1 is not and the output says
  // so. A limit nothing fits under keeps it to stage 1 (exit 1).
  const auto r = run_shardsim(
      {"tune", tiny(), "--pp", "2,4", "--pp-schedule", "1f1b,interleaved_1f1b", "--memory-limit", "1MiB", "-j", "2"}, "tune-too-deep");
  CHECK(r.code == 1);
  CHECK(r.out.find("training.grad_accum / parallelism.pp_schedule (3) = 9 configurations") != std::string::npos);
  CHECK(r.out.find("\n#   1 pipelined layout not searched: more model stages (pp x stages per rank) than the model's 4 blocks\n") !=
        std::string::npos);
}

TEST_CASE("shardsim tune says when the smallest peak is under the GPU's memory but fits only by releasing the allocator's cache") {
  // The ZeRO-Infinity scenario's best peak (31.2 GiB of the 31.5 a V100 leaves to PyTorch) needs
  // cudaFree retries, which tune counts as not fitting (sweep::PointResult::oom): the error must say
  // so, or it reads as a peak under the limit that "does not fit". --exhaustive: every point sets
  // one of tune's shardings (the staged search finds that the scenario's own zero3 fits with full
  // checkpointing and one sequence a micro-batch).
  const auto r = run_shardsim(
      {"tune", (test::source_dir() / "scenarios/zero-infinity_gpt-1t_512xv100.yaml").string(), "--exhaustive", "-j", "2"}, "tune-retries");
  CHECK(r.code == 1);
  CHECK(std::regex_search(r.err, std::regex(R"(the smallest peak was [0-9.]+ GiB with .*, which fits only by releasing the )"
                                            R"(allocator's cache \d+ times? \(a stall each)")));
}

TEST_CASE("shardsim tune --compile searches training.compile on and off and names why the configurations that cannot run failed") {
  // The tiny scenario compiled, TP 1 or 2 with async TP on and off: its 5 mesh layouts (TP 1, and
  // TP 2 with async off and on, at the micro-batch splits that keep the global batch) of which 2
  // ask for async TP, x 3 checkpointing modes x compile on and off, at the scenario's sharding and
  // wrap. Async TP without compile is refused: 2 x 3 = 6 configurations, for one reason (stage 2
  // starts from configurations that ran).
  const auto r =
      run_shardsim({"tune", tiny(), "--set", "training.compile=true", "--tp", "1,2", "--tp-async", "--compile", "-j", "2"}, "tune-compile");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("(5) x training.compile (2) = 30 configurations at the scenario's sharding and wrap") != std::string::npos);
  CHECK(r.out.find("\n#   6 failed: --set parallelism.tp_async=true: error: parallelism.tp_async: async TP is Inductor's "
                   "micro_pipeline_tp pass") != std::string::npos);
  std::smatch failed;
  REQUIRE(std::regex_search(
      r.out, failed, std::regex(R"(# simulated \d+ configurations in [0-9.]+ s with -j 2: \d+ fit, \d+ over the limit, (\d+) failed)")));
  CHECK(failed[1] == "6");
  // The tiny model's fastest run under shard_optimizer, which all-gathers before forward only:
  // FSDP1's prefetch settings are moot on its finalists, and the output says so rather than
  // simulating them.
  CHECK(std::regex_search(r.out, std::regex(R"(\n#   fsdp\.backward_prefetch not tried on \d+ of them: their settings make it moot\n)")));
  // Both values ran: compiled and eager configurations are among the results.
  const auto yaml = config::parse_yaml(r.out, Location{"tune output", 0, 0});
  REQUIRE(yaml.is_map());
  bool names_compile = false;
  for (const auto& section : yaml.entries) {
    for (const auto& e : section.value.entries) names_compile |= section.key == "training" && e.key == "compile";
  }
  CHECK(names_compile);
}

TEST_CASE("shardsim tune on a scenario with the float8 all-gather records the shardings it cannot combine with as failed") {
  // FSDP2 with torchao's float8 all-gather: no_shard gathers nothing and shard_optimizer gathers
  // the updated parameters in their own dtype, so both refuse it (config/float8_settings.cpp). tune
  // writes those shardings itself in stage 2, on the best of stage 1's 3 checkpointing modes with
  // distinct figures: 2 (the tiny model's step is launch-bound, so no checkpointing and selective
  // run alike; full differs in its peak). Each of them x 5 FSDP2 wraps fails with the reason, 10 a
  // sharding, 20 in all, and the search goes on over the other two.
  const auto r = run_shardsim({"tune", tiny(), "--set", "fsdp.version=2", "--set", "training.compile=true", "--set",
                               "training.float8={recipe: tensorwise, fsdp_float8_all_gather: true}", "-j", "2"},
                              "tune-float8-all-gather");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("# stage 2: fsdp.sharding (4) x fsdp.wrap (5) for the best 2 that fit: 40 configurations") != std::string::npos);
  CHECK(r.out.find("#   10 failed: --set training.float8={recipe: tensorwise, fsdp_float8_all_gather: true}:1:46: error: "
                   "training.float8.fsdp_float8_all_gather: no_shard does not all-gather parameters") != std::string::npos);
  CHECK(r.out.find("#   10 failed: --set training.float8={recipe: tensorwise, fsdp_float8_all_gather: true}:1:46: error: "
                   "training.float8.fsdp_float8_all_gather: shard_optimizer all-gathers") != std::string::npos);
  std::smatch failed;
  REQUIRE(std::regex_search(
      r.out, failed, std::regex(R"(# simulated \d+ configurations in [0-9.]+ s with -j 2: \d+ fit, \d+ over the limit, (\d+) failed)")));
  CHECK(failed[1] == "20");
}

TEST_CASE("a sweep over a setting that does not apply records the warning with every point") {
  // fsdp.backward_prefetch is FSDP1's; on FSDP2 the three points are alike, and each says why.
  const auto dir = scratch("warnings");
  const auto r = run_shardsim(
      {"sweep", tiny(), "--set", "fsdp.version=2", "--grid", "fsdp.backward_prefetch=pre,post,none", "-j", "2", "--out", dir.string()},
      "warnings");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto rows = sweep::read_jsonl(dir / "results.jsonl").rows;
  REQUIRE(rows.size() == 3);
  for (const auto& row : rows) {
    const auto w = row.metrics.find("warnings");
    REQUIRE(w != row.metrics.end());
    REQUIRE(w->size() == 1);
    CHECK((*w)[0].get<std::string>().find("warning: fsdp.backward_prefetch: an FSDP1 setting") != std::string::npos);
  }
  CHECK(r.err.find("warning: fsdp.backward_prefetch: an FSDP1 setting") != std::string::npos);  // the progress lines say so too
  fs::remove_all(dir);
}
