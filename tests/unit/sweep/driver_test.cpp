// The sweep driver with a stand-in point function (no SimGrid, figures from a formula), so that
// resume, kills, failures, -j and shards are checked quickly and exactly.
#include "sweep/driver.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "sweep/progress.hpp"
#include "sweep/result_store.hpp"
#include "sweep/worker_pool.hpp"
#include "test_support.hpp"

using namespace shardsim;
namespace fs = std::filesystem;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// a in {1, 2, 3}, b in {10, 20, 30, 40}: step time a + b/100 s, peak a x b / 10 GiB of 8 GiB.
sweep::SweepSpec spec_in(const fs::path& dir) {
  const std::vector<sweep::Axis> axes{sweep::parse_grid_option("a=1,2,3"), sweep::parse_grid_option("b=10,20,30,40")};
  sweep::SweepSpec s;
  s.scenario = test::source_dir() / "tests/data/tiny_llama.yaml";  // only its digest is used here
  s.dimensions = sweep::dimensions_of(axes);
  s.points = sweep::expand(axes);
  s.out = dir;
  return s;
}

double value(const sweep::Point& p, const std::string& key) {
  for (const auto& a : p.assignments) {
    if (a.rfind(key + "=", 0) == 0) return std::stod(a.substr(key.size() + 1));
  }
  return 0;
}

nlohmann::json formula(const sweep::Point& p) {
  const double a = value(p, "a"), b = value(p, "b");
  const double peak = a * b / 10 * kGiB;
  return {{"step_time_s", a + b / 100}, {"tokens_per_s_per_gpu", 1000 / (a + b / 100)},
          {"peak_memory_bytes", peak},  {"gpu_memory_bytes", 8 * kGiB},
          {"oom", peak > 8 * kGiB},     {"world_size", 8}};
}

fs::path fresh_dir(const std::string& name) {
  const auto d = fs::temp_directory_path() / fmt::format("shardsim-sweep-test-{}-{}", ::getpid(), name);
  fs::remove_all(d);
  return d;
}

std::string slurp(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t lines_in(const fs::path& f) {
  const std::string s = slurp(f);
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

sweep::SweepOutcome run(const sweep::SweepSpec& s, int jobs, const sweep::PointFunction& fn) {
  sweep::WorkerPool pool(jobs, fn);
  return sweep::run_sweep(s, pool, nullptr);
}

}  // namespace

TEST_CASE("every point runs once and results come back sorted: -j 1 and -j 3 write byte-identical files") {
  const auto d1 = fresh_dir("j1"), d3 = fresh_dir("j3");
  const auto o1 = run(spec_in(d1), 1, formula);
  const auto o3 = run(spec_in(d3), 3, formula);
  REQUIRE(o1.results.size() == 12);
  CHECK(o1.ran == 12);
  CHECK(o1.reused == 0);
  for (std::size_t i = 0; i < 12; ++i) CHECK(o3.results[i].index == i);
  // Point 5 is a = 2, b = 20: 2.2 s and 4 GiB.
  CHECK(o3.results[5].assignments == std::vector<std::string>{"a=2", "b=20"});
  CHECK(o3.results[5].number("step_time_s") == doctest::Approx(2.2).scale(0));
  CHECK(o3.results[5].number("peak_memory_bytes") == doctest::Approx(4 * kGiB).scale(0));
  for (const char* f : {"results.csv", "results.jsonl", "pareto.svg", "heatmap.svg", "index.html"}) {
    INFO(f);
    CHECK(slurp(d1 / f) == slurp(d3 / f));
  }
  CHECK(lines_in(d1 / "results.csv") == 13);  // header + 12
  fs::remove_all(d1);
  fs::remove_all(d3);
}

TEST_CASE("a sweep killed halfway resumes where it stopped: no finished point lost or run again") {
  const auto dir = fresh_dir("kill");
  const auto log = dir.string() + ".log";
  fs::remove(log);
  // Each point logs its start, then takes 40 ms.
  const sweep::PointFunction slow = [log](const sweep::Point& p) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    const std::string line = fmt::format("start {}\n", p.index);
    (void)!::write(fd, line.data(), line.size());
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    return formula(p);
  };
  const auto spec = spec_in(dir);
  const pid_t pid = ::fork();
  if (pid == 0) {
    (void)run(spec, 2, slow);
    ::_exit(0);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (lines_in(dir / "results.jsonl") < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // its workers die with it (PR_SET_PDEATHSIG)

  std::set<std::size_t> finished;
  for (const auto& r : sweep::read_jsonl(dir / "results.jsonl").rows) finished.insert(r.index);
  REQUIRE(finished.size() >= 4);
  REQUIRE(finished.size() < 12);
  // A write cut short by the kill: half a line at the end of the file.
  const std::string first = slurp(dir / "results.jsonl").substr(0, 30);
  std::ofstream(dir / "results.jsonl", std::ios::app) << first;
  std::ofstream(log, std::ios::app) << "resumed\n";

  const auto outcome = run(spec, 2, slow);
  CHECK(outcome.reused == finished.size());
  CHECK(outcome.ran == 12 - finished.size());
  REQUIRE(outcome.results.size() == 12);
  std::multiset<std::size_t> started_again;
  std::istringstream lines(slurp(log));
  bool after = false;
  for (std::string l; std::getline(lines, l);) {
    if (l == "resumed") after = true;
    if (after && l.rfind("start ", 0) == 0) started_again.insert(std::stoul(l.substr(6)));
  }
  for (std::size_t i = 0; i < 12; ++i) {
    INFO("point " << i);
    CHECK(started_again.count(i) == (finished.count(i) > 0 ? 0U : 1U));
    CHECK(outcome.results[i].index == i);
  }
  // The files end whole and sorted, exactly as an uninterrupted sweep writes them.
  const auto clean = fresh_dir("kill-clean");
  (void)run(spec_in(clean), 1, formula);
  CHECK(slurp(dir / "results.jsonl") == slurp(clean / "results.jsonl"));
  CHECK(slurp(dir / "results.csv") == slurp(clean / "results.csv"));
  fs::remove_all(dir);
  fs::remove_all(clean);
  fs::remove(log);
}

TEST_CASE("a failing or crashing point is recorded with its error and the sweep goes on") {
  const auto dir = fresh_dir("fail");
  const sweep::PointFunction fn = [](const sweep::Point& p) {
    if (p.index == 4) throw ConfigError(Location{"--set b=10", 0, 0}, "b", "expected something else");
    if (p.index == 7) std::raise(SIGKILL);
    return formula(p);
  };
  const auto o = run(spec_in(dir), 2, fn);
  REQUIRE(o.results.size() == 12);
  CHECK(o.failed() == 2);
  CHECK(o.results[4].error == "--set b=10: error: b: expected something else");
  CHECK(o.results[7].error == "error: the worker simulating this point was killed by signal 9 (Killed)");
  CHECK(o.results[8].ok());
  // Recorded failures are finished points; --retry-failed runs them again.
  auto again = spec_in(dir);
  CHECK(run(again, 2, formula).ran == 0);
  again.retry_failed = true;
  const auto retried = run(again, 2, formula);
  CHECK(retried.ran == 2);
  CHECK(retried.failed() == 0);
  fs::remove_all(dir);
}

TEST_CASE("a directory holding another sweep's results is refused") {
  const auto dir = fresh_dir("other");
  (void)run(spec_in(dir), 2, formula);
  auto other = spec_in(dir);
  other.points.pop_back();
  std::string message;
  try {
    (void)run(other, 2, formula);
  } catch (const ConfigError& e) {
    message = e.what();
  }
  CHECK(message ==
        (dir / "sweep.json").string() +
            ": error: this directory holds results of a different sweep (points, points_digest differ); expected the same scenario "
            "file, --set and grid as before, or another --out directory");
  fs::remove_all(dir);
}

TEST_CASE("shards in one directory cover every point once and the whole sweep then merges them without running any") {
  const auto dir = fresh_dir("shards");
  std::multiset<std::size_t> seen;
  for (std::size_t i = 0; i < 3; ++i) {
    auto s = spec_in(dir);
    s.shard = sweep::Shard{i, 3};
    const auto o = run(s, 2, formula);
    CHECK(o.ran == o.results.size());
    for (const auto& r : sweep::read_jsonl(dir / s.shard.dir_name() / "results.jsonl").rows) seen.insert(r.index);
  }
  CHECK(seen.size() == 12);
  for (std::size_t i = 0; i < 12; ++i) CHECK(seen.count(i) == 1);
  const auto merged = run(spec_in(dir), 2, [](const sweep::Point&) -> nlohmann::json { throw RuntimeError("must not run"); });
  CHECK(merged.ran == 0);
  CHECK(merged.reused == 12);
  const auto straight = fresh_dir("straight");
  (void)run(spec_in(straight), 2, formula);
  CHECK(slurp(dir / "results.csv") == slurp(straight / "results.csv"));
  fs::remove_all(dir);
  fs::remove_all(straight);
}

TEST_CASE("-j 4 runs four points at a time: 8 points of 100 ms each take two rounds") {
  // The points sleep rather than compute, so that other load on the machine cannot hide whether
  // they overlap. Each logs its start and end (steady clock, microseconds).
  const auto dir = fresh_dir("overlap");
  const auto log = dir.string() + ".log";
  fs::remove(log);
  const sweep::PointFunction nap = [log](const sweep::Point& p) {
    auto now = [] {
      return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
    const auto start = now();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string line = fmt::format("{} {}\n", start, now());
    const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    (void)!::write(fd, line.data(), line.size());
    ::close(fd);
    return formula(p);
  };
  auto s = spec_in(dir);
  s.points.resize(8);
  s.out.reset();
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(run(s, 4, nap).results.size() == 8);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<std::pair<long long, int>> events;  // (time, +1 start / -1 end)
  std::istringstream lines(slurp(log));
  for (long long a = 0, b = 0; lines >> a >> b;) {
    events.emplace_back(a, 1);
    events.emplace_back(b, -1);
  }
  std::sort(events.begin(), events.end());
  int running = 0, most = 0;
  for (const auto& [t, d] : events) most = std::max(most, running += d);
  CHECK(events.size() == 16);
  CHECK(most == 4);
  CHECK(wall < 0.6);  // 2 rounds of 0.1 s; one at a time would take 0.8 s
  MESSAGE("8 points of 0.1 s with -j 4: " << wall << " s");
  fs::remove(log);
}

TEST_CASE("sweep progress shows each warning once, then counts it, and lists them all at the end") {
  // Three points: the first two give warning A, the last A and B. In a log, A is written under
  // the first point only, the others say "as above"; the end lists A (3 of 3) and B (1 of 3).
  const auto point = [](std::size_t i, std::vector<std::string> warnings) {
    sweep::PointResult r;
    r.index = i;
    r.assignments = {fmt::format("p={}", i)};
    r.metrics = {{"step_time_s", 1.0}, {"tokens_per_s_per_gpu", 100.0}, {"peak_memory_bytes", 1024.0 * 1024 * 1024}, {"oom", false}};
    r.metrics["warnings"] = warnings;
    return r;
  };
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    sweep::Progress progress(f, false, "-j 1");
    progress.started(3, 0);
    progress.finished(point(0, {"a.yaml:1:1: warning: A"}));
    progress.finished(point(1, {"a.yaml:1:1: warning: A"}));
    progress.finished(point(2, {"a.yaml:1:1: warning: A", "a.yaml:2:1: warning: B"}));
    progress.ended();
  }
  std::rewind(f);
  std::string text;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) text.push_back(static_cast<char>(c));
  std::fclose(f);
  const auto count = [&](std::string_view what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("    a.yaml:1:1: warning: A") == 1);  // under point 0 only
  CHECK(count("[1 warning as above]") == 2);        // points 1 and 2
  CHECK(count("    a.yaml:2:1: warning: B") == 1);  // new at point 2
  CHECK(text.find("  3 of 3 points: a.yaml:1:1: warning: A\n") != std::string::npos);
  CHECK(text.find("  1 of 3 points: a.yaml:2:1: warning: B\n") != std::string::npos);
}
