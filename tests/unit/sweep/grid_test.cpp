// Grid expansion, value syntax, ranges, zipped axes, sweep files and shards, with the expected
// points written out by hand.
#include "sweep/grid.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <set>

#include "config/yaml_load.hpp"
#include "core/error.hpp"
#include "sweep/shard.hpp"
#include "sweep/sweep_file.hpp"
#include "test_support.hpp"

using namespace shardsim;
using sweep::Axis;

namespace {

std::vector<std::string> values(const Axis& a) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < a.size(); ++i) out.push_back(a.value_label(i));
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("two --grid axes of 3 values expand to 9 points with the last axis varying fastest") {
  const std::vector<Axis> axes{sweep::parse_grid_option("fsdp.backward_prefetch=pre,post,none"),
                               sweep::parse_grid_option("fsdp.wrap.blocks_per_unit=1,2,4")};
  const auto points = sweep::expand(axes);
  REQUIRE(points.size() == 9);
  CHECK(points[0].assignments == std::vector<std::string>{"fsdp.backward_prefetch=pre", "fsdp.wrap.blocks_per_unit=1"});
  CHECK(points[1].assignments == std::vector<std::string>{"fsdp.backward_prefetch=pre", "fsdp.wrap.blocks_per_unit=2"});
  CHECK(points[3].assignments == std::vector<std::string>{"fsdp.backward_prefetch=post", "fsdp.wrap.blocks_per_unit=1"});
  CHECK(points[8].assignments == std::vector<std::string>{"fsdp.backward_prefetch=none", "fsdp.wrap.blocks_per_unit=4"});
  for (std::size_t i = 0; i < points.size(); ++i) CHECK(points[i].index == i);
  CHECK(sweep::expand(std::vector<Axis>{}).size() == 1);  // no axes: the scenario as written
}

TEST_CASE("ranges continue a constant ratio or step to their last value") {
  CHECK(values(sweep::parse_grid_option("cluster.nodes=1,2,4,...,128")) ==
        std::vector<std::string>{"1", "2", "4", "8", "16", "32", "64", "128"});
  CHECK(values(sweep::parse_grid_option("training.micro_batch=2, 4, ..., 10")) == std::vector<std::string>{"2", "4", "6", "8", "10"});
  CHECK(values(sweep::parse_grid_option("cluster.nodes=128,64,...,16")) == std::vector<std::string>{"128", "64", "32", "16"});
  CHECK(values(sweep::parse_grid_option("training.grad_accum=9,7,...,1")) == std::vector<std::string>{"9", "7", "5", "3", "1"});
  CHECK(error_of([] {
          (void)sweep::parse_grid_option("cluster.nodes=1,3,...,10");
        }).find("10 is not in the sequence 1, 3, ...: it goes 9, 11") != std::string::npos);
  CHECK(error_of([] { (void)sweep::parse_grid_option("cluster.nodes=1,2,5,...,20"); }).find("cannot continue 1, 2, 5") !=
        std::string::npos);
  CHECK(error_of([] { (void)sweep::parse_grid_option("cluster.nodes=1,...,20"); }).find("at least two values before ...") !=
        std::string::npos);
  // Two values fit a step and a ratio; the end decides, and when both reach it a third is needed.
  CHECK(values(sweep::parse_grid_option("cluster.nodes=2,4,...,10")) == std::vector<std::string>{"2", "4", "6", "8", "10"});
  CHECK(error_of([] {
          (void)sweep::parse_grid_option("cluster.nodes=1,2,...,8");
        }).find("1, 2, ..., 8 could go on by a step or by a ratio") != std::string::npos);
  CHECK(error_of([] { (void)sweep::parse_grid_option("cluster.nodes=1,2,...,1000000"); }).find("more than 10000 values") !=
        std::string::npos);
}

TEST_CASE("commas inside braces and brackets do not split and values are written canonically") {
  const auto a = sweep::parse_grid_option("fsdp.wrap={policy: module,module: block}, {  policy: size , min_params: 5e8 },{policy: none}");
  CHECK(values(a) == std::vector<std::string>{"{policy: module, module: block}", "{policy: size, min_params: 5e8}", "{policy: none}"});
  // Quoting is kept where plain YAML would read differently, and the text parses back the same.
  const auto q = sweep::parse_grid_option("name='a, b',\"c: d\",plain");
  CHECK(values(q) == std::vector<std::string>{"\"a, b\"", "\"c: d\"", "plain"});
  for (const auto& v : values(q)) {
    const auto node = config::parse_yaml(v, Location{"test", 0, 0});
    CHECK(sweep::to_flow_yaml(node) == v);
  }
}

TEST_CASE("zipped keys advance together as one axis, lists of different lengths are refused") {
  const std::vector<std::string> zip{"training.micro_batch=1,2,4", "training.grad_accum=4,2,1"};
  const Axis a = sweep::parse_zip_options(zip);
  CHECK(a.keys == std::vector<std::string>{"training.micro_batch", "training.grad_accum"});
  CHECK(values(a) == std::vector<std::string>{"1 / 4", "2 / 2", "4 / 1"});
  const std::vector<Axis> axes{sweep::parse_grid_option("fsdp.sharding=full_shard,no_shard"), a};
  const auto points = sweep::expand(axes);
  REQUIRE(points.size() == 6);  // 2 x 3, not 2 x 3 x 3
  CHECK(points[5].assignments == std::vector<std::string>{"fsdp.sharding=no_shard", "training.micro_batch=4", "training.grad_accum=1"});
  const std::vector<std::string> bad{"training.micro_batch=1,2,4", "training.grad_accum=2,1"};
  CHECK(error_of([&] {
          (void)sweep::parse_zip_options(bad);
        }).find("zipped lists must have the same length; got training.micro_batch: 3 values, training.grad_accum: 2 values") !=
        std::string::npos);
}

TEST_CASE("a key swept twice or a value listed twice or a malformed --grid is a user error") {
  const std::vector<Axis> twice{sweep::parse_grid_option("cluster.nodes=1,2"), sweep::parse_grid_option("cluster.nodes=4")};
  CHECK(error_of([&] { (void)sweep::grid_size(twice); }) ==
        "--grid cluster.nodes=4: error: cluster.nodes: swept twice; give each key one list of values");
  CHECK(error_of([] { (void)sweep::parse_grid_option("fsdp.backward_prefetch=pre,pre"); }).find("value pre is listed twice") !=
        std::string::npos);
  CHECK(error_of([] { (void)sweep::parse_grid_option("fsdp.backward_prefetch"); }).find("expected KEY=V1,V2") != std::string::npos);
  CHECK(error_of([] { (void)sweep::parse_grid_option("fsdp.backward_prefetch=pre,,post"); }).find("expected a value between each pair") !=
        std::string::npos);
  CHECK(error_of([] { (void)sweep::parse_grid_option("fsdp..x=1"); }).find("expected a dotted scenario key") != std::string::npos);
  const std::vector<Axis> huge{sweep::parse_grid_option("a=1,2,...,1000"), sweep::parse_grid_option("b=1,2,...,1000"),
                               sweep::parse_grid_option("c=1,2,...,10")};
  CHECK(error_of([&] { (void)sweep::grid_size(huge); }).find("more than 1000000 points") != std::string::npos);
}

TEST_CASE("a sweep file gives the scenario and common overrides and a product grid with ranges and zipped groups") {
  const test::TempFile scenario_file("scenario.yaml", "name: stand-in\n");
  const test::TempFile f("sweep.yaml",
                         "scenario: scenario.yaml\n"
                         "set: {cluster.nodes: 2, fsdp.wrap: {policy: module}}\n"
                         "grid:\n"
                         "  fsdp:\n"
                         "    backward_prefetch: [pre, post, none]\n"
                         "  cluster.overrides.gpu.memory: [80GiB, 96GiB]\n"
                         "  fsdp.wrap.blocks_per_unit: [1, 2, 4, ..., 16]\n"
                         "zip:\n"
                         "  - {training.micro_batch: [1, 2], training.grad_accum: [2, 1]}\n");
  const auto s = sweep::load_sweep_file(f.path());
  CHECK(s.scenario == f.path().parent_path() / "scenario.yaml");
  CHECK(s.sets == std::vector<std::string>{"cluster.nodes=2", "fsdp.wrap={policy: module}"});
  REQUIRE(s.axes.size() == 4);
  CHECK(s.axes[0].label() == "fsdp.backward_prefetch");
  CHECK(values(s.axes[2]) == std::vector<std::string>{"1", "2", "4", "8", "16"});
  CHECK(s.axes[3].label() == "training.micro_batch / training.grad_accum");
  CHECK(sweep::expand(s.axes).size() == 3 * 2 * 5 * 2);
}

TEST_CASE("sweep file mistakes are reported at their file:line:col") {
  const test::TempFile f("bad_sweep.yaml",
                         "scenario: scenario.yaml\n"
                         "grid:\n"
                         "  cluster.nodes: 4\n");
  CHECK(error_of([&] { (void)sweep::load_sweep_file(f.path()); }) ==
        f.str() + ":1:11: error: scenario: no such file: " + (f.path().parent_path() / "scenario.yaml").string());
  const test::TempFile scenario_file("scenario.yaml", "name: stand-in\n");
  CHECK(error_of([&] { (void)sweep::load_sweep_file(f.path()); }) ==
        f.str() + ":3:18: error: cluster.nodes: expected a list of values such as [pre, post, none]; got \"4\"");
  const test::TempFile g("typo_sweep.yaml", "scenario: scenario.yaml\ngird: {cluster.nodes: [1, 2]}\n");
  CHECK(error_of([&] {
          (void)sweep::load_sweep_file(g.path());
        }).find(":2:1: error: gird: unknown key in sweep settings (did you mean \"grid\"?)") != std::string::npos);
}

TEST_CASE("--shard i/3 splits 10 points into 4 + 3 + 3 that cover every point exactly once") {
  std::vector<sweep::Point> all(10);
  for (std::size_t i = 0; i < all.size(); ++i) all[i].index = i;
  std::multiset<std::size_t> seen;
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto part = sweep::shard_points(all, sweep::parse_shard(std::to_string(i) + "/3"));
    sizes.push_back(part.size());
    for (const auto& p : part) seen.insert(p.index);
  }
  CHECK(sizes == std::vector<std::size_t>{4, 3, 3});
  CHECK(seen.size() == 10);
  for (std::size_t i = 0; i < 10; ++i) CHECK(seen.count(i) == 1);
  for (const char* bad : {"3/3", "1", "a/b", "0/0", "-1/2", "1/2/3"}) {
    CHECK(error_of([&] { (void)sweep::parse_shard(bad); }).find("expected I/N with 0 <= I < N") != std::string::npos);
  }
}
