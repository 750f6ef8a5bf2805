// The pictures: valid XML (parsed with expat) with as many cells and markers as worked out by
// hand from the points, the Pareto frontier found by hand, and the best-settings table.
#include "sweep/plots.hpp"

#include <doctest/doctest.h>

#include "core/args.hpp"
#include "xml_check.hpp"

using namespace shardsim;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

sweep::PointResult point(std::size_t index, std::vector<std::string> set, double gib, double step, double tps, bool oom = false) {
  sweep::PointResult r;
  r.index = index;
  r.assignments = std::move(set);
  r.metrics = {{"step_time_s", step},
               {"tokens_per_s_per_gpu", tps},
               {"peak_memory_bytes", gib * kGiB},
               {"gpu_memory_bytes", 80 * kGiB},
               {"oom", oom},
               {"mfu", 0.4},
               {"exposed_comm_s", 0.01}};
  return r;
}

// (memory GiB, step s): A (10, 5), B (20, 3), C (30, 4), D (40, 1), E (15, 5), F (100, 0.5) over
// the 80 GiB GPU, G failed. C is beaten by B, E by A: the frontier is A, B, D.
std::vector<sweep::PointResult> pareto_points() {
  std::vector<sweep::PointResult> r{point(0, {"k=A"}, 10, 5, 200),  point(1, {"k=B"}, 20, 3, 333), point(2, {"k=C"}, 30, 4, 250),
                                    point(3, {"k=D"}, 40, 1, 1000), point(4, {"k=E"}, 15, 5, 200), point(5, {"k=F"}, 100, 0.5, 2000, true)};
  sweep::PointResult g;
  g.index = 6;
  g.assignments = {"k=G"};
  g.error = "error: failed <badly> & loudly";
  r.push_back(g);
  return r;
}

}  // namespace

TEST_CASE("the Pareto frontier of step time against memory is the points no other beats on both") {
  CHECK(sweep::pareto_frontier(pareto_points()) == std::vector<std::size_t>{0, 1, 3});
  // Best settings by tokens/s among the points that fit: D, B, C, then A before E (same figures, earlier).
  CHECK(sweep::best_points(pareto_points(), 10) == std::vector<std::size_t>{3, 1, 2, 0, 4});
}

TEST_CASE("pareto.svg is valid XML with a circle per fitting point (frontier filled) and a cross per OOM point") {
  const auto x = test::check_xml(sweep::pareto_svg(pareto_points(), "step & memory <test>"));
  REQUIRE_MESSAGE(x.well_formed, x.error);
  CHECK(x.count_class("circle.point") == 5);  // A to E; F is out of memory, G failed
  CHECK(x.count_class("circle.frontier") == 3);
  CHECK(x.count_class("path.oom") == 1);
  CHECK(x.count_class("polyline.frontier-line") == 1);
  CHECK(std::find(x.texts.begin(), x.texts.end(), "left to PyTorch 80.0 GiB") != x.texts.end());
}

TEST_CASE("pareto.svg draws the memory line at what the GPU leaves to PyTorch after the CUDA context and NCCL") {
  auto points = pareto_points();
  for (auto& p : points) {
    if (p.ok()) p.metrics["outside_allocator_bytes"] = {{"cuda_context", 0.5 * kGiB}, {"nccl", 1.5 * kGiB}};
  }
  CHECK(points[0].allocator_memory() == 78 * kGiB);
  const auto x = test::check_xml(sweep::pareto_svg(points, "memory"));
  REQUIRE_MESSAGE(x.well_formed, x.error);
  CHECK(std::find(x.texts.begin(), x.texts.end(), "left to PyTorch 78.0 GiB") != x.texts.end());
}

TEST_CASE("heatmap.svg has one cell per pair of values of the first two swept keys showing the best over the third") {
  // x in {1, 2} (rows), y in {p, <q&>, r} (columns), z in {u, v} folded into each cell.
  std::vector<sweep::PointResult> rs;
  const std::vector<std::string> ys{"p", "<q&>", "r"};
  std::size_t i = 0;
  for (const char* x : {"1", "2"}) {
    for (const auto& y : ys) {
      for (const char* z : {"u", "v"}) {
        const bool v = std::string(z) == "v";
        const bool oom = std::string(x) == "2" && y == "r";  // this whole cell is out of memory
        rs.push_back(
            point(i++, {std::string("x=") + x, "y=" + y, std::string("z=") + z}, oom ? 90 : 30, v ? 0.5 : 0.625, v ? 120 : 100, oom));
      }
    }
  }
  rs[2].error = "error: one of cell (1, <q&>) failed";  // the other point of that cell still fits
  rs[2].metrics = nlohmann::json::object();
  const std::vector<std::vector<std::string>> dims{{"x"}, {"y"}, {"z"}};
  const auto h = sweep::build_heatmap(dims, rs);
  REQUIRE(h.has_value());
  CHECK(h->y_label == "x");
  CHECK(h->x_label == "y");
  CHECK(h->x_values == ys);
  CHECK(h->folds_other_keys);
  CHECK(h->cells[0][0].best == std::optional<std::size_t>(1));  // x=1, y=p: z=v has more tokens/s
  CHECK(h->cells[0][1].best == std::optional<std::size_t>(3));
  CHECK(h->cells[0][1].failed == 1);
  CHECK(!h->cells[1][2].best.has_value());
  CHECK(h->cells[1][2].oom == 2);

  const auto x = test::check_xml(sweep::heatmap_svg(*h, rs, "step time"));
  REQUIRE_MESSAGE(x.well_formed, x.error);
  CHECK(x.count_class("rect.cell") == 6);
  CHECK(std::count(x.texts.begin(), x.texts.end(), "OOM") == 1);
  // The best of every cell that fits, by tokens/s per GPU (the default objective), then its step time and memory.
  CHECK(std::count(x.texts.begin(), x.texts.end(), "120 tokens/s") == 5);
  CHECK(std::count(x.texts.begin(), x.texts.end(), "0.5000 s, 30.0 GiB") == 5);
  CHECK(std::count(x.texts.begin(), x.texts.end(), "<q&>") == 1);  // escaped in the file, read back by the parser
}

TEST_CASE("a heatmap needs a swept key that varies: one row for one and none for none") {
  std::vector<sweep::PointResult> rs{point(0, {"a=1", "b=x"}, 1, 1, 1), point(1, {"a=2", "b=x"}, 1, 2, 1),
                                     point(2, {"a=3", "b=x"}, 1, 3, 1)};
  const auto one = sweep::build_heatmap({{"a"}, {"b"}}, rs);
  REQUIRE(one.has_value());
  CHECK(one->y_values.size() == 1);
  CHECK(one->x_values.size() == 3);
  const auto x = test::check_xml(sweep::heatmap_svg(*one, rs, "one row"));
  REQUIRE(x.well_formed);
  CHECK(x.count_class("rect.cell") == 3);
  CHECK(!sweep::build_heatmap({{"b"}}, rs).has_value());
}

TEST_CASE("index.html lists the best settings by tokens/s and the failed points escaped") {
  sweep::SweepSpec spec;
  spec.scenario = "scenarios/x.yaml";
  spec.dimensions = {{"k"}};
  const std::string html = sweep::index_html(spec, pareto_points(), true);
  CHECK(html.find("<img src=\"heatmap.svg\"") != std::string::npos);
  CHECK(html.find("<img src=\"pareto.svg\"") != std::string::npos);
  CHECK(html.find("7 points: 5 fit in memory, 1 out of memory, 1 failed.") != std::string::npos);
  // D (1000 tokens/s) is ranked first, B second.
  const auto d = html.find("<td>1</td><td class=\"k\">D</td>");
  const auto b = html.find("<td>2</td><td class=\"k\">B</td>");
  CHECK(d != std::string::npos);
  CHECK(b != std::string::npos);
  CHECK(d < b);
  CHECK(html.find("shardsim run scenarios/x.yaml --set &#39;k=D&#39;") != std::string::npos);
  CHECK(html.find("error: failed &lt;badly&gt; &amp; loudly") != std::string::npos);
}

TEST_CASE("sweeps rank by their objective: the best throughput is not the fastest step") {
  // A micro-batch axis on 8 GPUs: mb=1 steps in 1.0 s at 8,000 tokens/s per GPU, mb=2 in 1.8 s at
  // 9,000, mb=4 in 4.0 s at 8,200. By throughput mb=2 is best; by step time mb=1.
  std::vector<sweep::PointResult> rs{point(0, {"training.micro_batch=1"}, 40, 1.0, 8000),
                                     point(1, {"training.micro_batch=2"}, 60, 1.8, 9000),
                                     point(2, {"training.micro_batch=4"}, 70, 4.0, 8200)};
  for (auto& r : rs) r.metrics["world_size"] = 8;
  const sweep::Objective throughput;
  const sweep::Objective step = sweep::parse_objective("step_time");
  CHECK(sweep::best_points(rs, 3, throughput) == std::vector<std::size_t>{1, 2, 0});
  CHECK(sweep::best_points(rs, 3, step) == std::vector<std::size_t>{0, 1, 2});
  // Throughput against memory: mb=1 (40 GiB) and mb=2 (60 GiB, more tokens/s) are on the
  // frontier, mb=4 (more memory, fewer tokens/s than mb=2) is not; by step time only mb=1 is.
  CHECK(sweep::pareto_frontier(rs, throughput) == std::vector<std::size_t>{0, 1});
  CHECK(sweep::pareto_frontier(rs, step) == std::vector<std::size_t>{0});
  const std::vector<std::vector<std::string>> dims{{"training.micro_batch"}};
  const auto h = sweep::build_heatmap(dims, rs, throughput);
  REQUIRE(h.has_value());
  const auto x = test::check_xml(sweep::heatmap_svg(*h, rs, "tokens/s per GPU: s.yaml", throughput));
  REQUIRE_MESSAGE(x.well_formed, x.error);
  CHECK(std::find(x.texts.begin(), x.texts.end(), "each cell: tokens/s per GPU, then step time and peak memory; green is best") !=
        x.texts.end());
  const auto p = test::check_xml(sweep::pareto_svg(rs, "t", step));
  REQUIRE_MESSAGE(p.well_formed, p.error);
  CHECK(p.count_class("circle.frontier") == 1);
  CHECK(std::find(p.texts.begin(), p.texts.end(), "step time (s)") != p.texts.end());
}

TEST_CASE("time to a token budget ranks by the whole job's throughput") {
  // 1e12 tokens: 8 GPUs at 9,000 tokens/s each take 1e12 / 72,000 = 13,888,889 s; 16 GPUs at
  // 8,000 each take 1e12 / 128,000 = 7,812,500 s, the better though each GPU is slower.
  std::vector<sweep::PointResult> rs{point(0, {"cluster.nodes=1"}, 40, 1.0, 9000), point(1, {"cluster.nodes=2"}, 40, 1.1, 8000)};
  rs[0].metrics["world_size"] = 8;
  rs[1].metrics["world_size"] = 16;
  const auto o = sweep::parse_objective("time_to_tokens:1e12");
  CHECK(o.value(rs[0]) == doctest::Approx(1e12 / 72000).scale(0));
  CHECK(o.value(rs[1]) == doctest::Approx(1e12 / 128000).scale(0));
  CHECK(sweep::best_points(rs, 2, o) == std::vector<std::size_t>{1, 0});
  CHECK(sweep::best_points(rs, 2, sweep::Objective{}) == std::vector<std::size_t>{0, 1});
  CHECK(o.format(o.value(rs[1])) == "90.4 days");
  CHECK_THROWS_AS((void)sweep::parse_objective("time_to_tokens:"), UsageError);
  CHECK_THROWS_WITH_AS(
      (void)sweep::parse_objective("speed"),
      "--objective: expected one of throughput, step_time, time_to_tokens:N (N tokens, e.g. time_to_tokens:1e12); got \"speed\"",
      UsageError);
}
