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

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "system_support.hpp"

using namespace shardsim::test;
namespace fs = std::filesystem;

namespace {

// The figures pinned: what a user reads, and the model as built.
const std::vector<std::string> kKeys{
    "/step_time_s",    "/tokens_per_s_per_gpu", "/tflops_per_gpu",       "/mfu",        "/compute_s",       "/comm_s",
    "/exposed_comm_s", "/peak_memory_bytes",    "/peak_allocated_bytes", "/world_size", "/simulated_ranks", "/oom",
    "/alloc_retries",  "/model/params_total",   "/model/flops_per_token"};
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

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    lines.push_back(std::move(line));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t at; (at = s.find(sep, start)) != std::string::npos; start = at + sep.size())
    parts.push_back(s.substr(start, at - start));
  parts.push_back(s.substr(start));
  return parts;
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(' ');
  return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(' ') - first + 1);
}

}  // namespace

// The README shows what `make run` prints under "## What you see", up to a line "...". A change
// that moves a figure there (the error bands move whenever a published case does) must update the
// README too, or a new user reads one number in the README and another on the screen.
TEST_CASE("readme: the summary the README shows is what make run prints") {
  const auto readme = lines_of(read_all(source_dir() / "README.md"));
  auto it = std::find(readme.begin(), readme.end(), "## What you see");
  REQUIRE(it != readme.end());
  it = std::find(it, readme.end(), "```");
  REQUIRE(it != readme.end());
  std::vector<std::string> shown;
  for (++it; it != readme.end() && trimmed(*it) != "..." && *it != "```"; ++it) shown.push_back(*it);
  REQUIRE(shown.size() >= 10);

  const ProcessResult r = run_shardsim({"run", "scenarios/llama3.1-8b_8xh100.yaml"}, scratch_dir("readme"), 300);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto printed = lines_of(r.out);
  const std::size_t n = std::min(shown.size(), printed.size());
  for (std::size_t i = 0; i < n; ++i) {
    INFO("README line " << i + 1 << " of the block");
    CHECK(shown[i] == printed[i]);
  }
  CHECK(printed.size() >= shown.size());
}

namespace {

// The ledger's metrics a table's metric column stands for.
std::vector<std::string> ledger_metrics(const std::string& table_metric) {
  if (table_metric == "tokens/s/GPU") return {"tokens/s"};
  if (table_metric == "TFLOPS/GPU") return {"TFLOPS"};
  if (table_metric == "GiB reserved") return {"GiB reserved"};
  if (table_metric == "GiB allocated") return {"GiB allocated", "GiB alloc rank 0"};
  return {};
}

bool is_case_id(const std::string& word) {
  return word.size() >= 2 && word.size() <= 3 && std::isupper(static_cast<unsigned char>(word[0])) &&
         std::isdigit(static_cast<unsigned char>(word[1]));
}

using Ledger = std::multimap<std::pair<std::string, std::string>, double>;  // (case, metric) -> error in %

struct TableCount {
  int rows = 0;
  int errors = 0;
};

// Checks each row of `file`'s tables that has `cells` cells, the first naming published cases
// ("P1 ...", or "P1 / P2 ..." with one error each) and the last their errors ("-5.9 %", "+1.9 /
// +0.8 %"): the metric is the cell `metric_cell` names, or tokens/s without one (-1).
TableCount check_table(const std::string& file, const Ledger& ledger, std::size_t cells, int metric_cell) {
  TableCount n;
  for (const auto& line : lines_of(read_all(source_dir() / file))) {
    const auto c = split(line, "|");  // "", cells..., ""
    if (c.size() != cells + 2 || !c[0].empty()) continue;
    // "P1 ..." or "P1 / P2 ...": the cases whose errors the row shows, in order.
    const auto words = split(trimmed(c[1]), " ");
    std::vector<std::string> ids;
    for (std::size_t w = 0; w < words.size() && is_case_id(words[w]); w += 2) {
      ids.push_back(words[w]);
      if (w + 1 >= words.size() || words[w + 1] != "/") break;
    }
    const std::string error_cell = trimmed(c[cells]);
    if (ids.empty() || error_cell.empty()) continue;
    if (error_cell.back() != '%' && std::isdigit(static_cast<unsigned char>(error_cell.back())) == 0) continue;  // "(not compared)"
    const std::string metric = metric_cell < 0 ? "tokens/s/GPU" : trimmed(c[static_cast<std::size_t>(metric_cell)]);
    const auto metrics = ledger_metrics(metric);
    INFO(file << " row: " << line);
    REQUIRE_MESSAGE(!metrics.empty(), "a metric the ledger has no name for");
    ++n.rows;
    const auto shown_errors = split(error_cell, " / ");
    for (std::size_t i = 0; i < shown_errors.size(); ++i) {
      std::string e = trimmed(shown_errors[i]);
      if (!e.empty() && e.back() == '%') e = trimmed(e.substr(0, e.size() - 1));
      const double shown = std::stod(e);
      const std::string& id = ids[std::min(i, ids.size() - 1)];
      bool found = false;
      for (const auto& m : metrics) {
        const auto [lo, hi] = ledger.equal_range({id, m});
        for (auto it = lo; it != hi; ++it) found = found || std::fabs(it->second - shown) <= 0.051;
      }
      CHECK_MESSAGE(found, id << " " << metric << " " << e << "%: not an error the ledger holds");
      ++n.errors;
    }
  }
  return n;
}

}  // namespace

// The README's and the docs' tables of published runs copy `make validate`'s errors by hand; the
// ledger (validation/residuals.csv, which the validation CTest keeps current) is where they are
// computed. Every error a table shows must be one the ledger holds for that case and metric, to
// the table's 0.1 point, so that a change which moves a published case cannot leave them behind.
TEST_CASE("readme: every error in the tables of published runs is the ledger's") {
  Ledger ledger;
  for (const auto& line : lines_of(read_all(source_dir() / "validation/residuals.csv"))) {
    const auto f = split(line, ",");
    if (f.size() < 6 || f[0] == "case") continue;
    ledger.emplace(std::make_pair(f[0], f[1]), 100 * std::stod(f[5]));
  }
  REQUIRE(ledger.size() >= 100);

  // README: run | metric | predicted | measured | error
  const auto readme = check_table("README.md", ledger, 5, 2);
  CHECK(readme.rows >= 60);
  CHECK(readme.errors >= 120);
  // docs: run | speed-up published | predicted | tokens/s error
  const auto float8 = check_table("docs/float8.md", ledger, 4, -1);
  CHECK(float8.errors >= 10);
  const auto parallelism = check_table("docs/parallelism.md", ledger, 4, -1);
  CHECK(parallelism.errors >= 8);
}
