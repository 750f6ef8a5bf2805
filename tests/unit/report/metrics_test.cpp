#include "report/metrics.hpp"

#include <doctest/doctest.h>

#include <tuple>

#include "report/error_band.hpp"
#include "report/outputs.hpp"
#include "report_fixtures.hpp"

using namespace shardsim;

namespace {

graph::Op op(graph::OpKind kind, graph::Stream stream, const char* name) {
  graph::Op o;
  o.kind = kind;
  o.stream = stream;
  o.name = name;
  if (kind == graph::OpKind::all_gather) o.group = graph::Group::shard;
  return o;
}

}  // namespace

TEST_CASE("exposed communication is collective time not covered by compute") {
  // Compute [0, 1] and [2, 3]; an all-gather [0.5, 2.5]: exposed = [1, 2] = 1 s.
  graph::StepGraph g;
  g.info.world_size = 1;
  g.info.tokens_per_micro_step = 1000;
  g.add_op(op(graph::OpKind::forward, graph::Stream::compute, "FWD a"));
  g.add_op(op(graph::OpKind::all_gather, graph::Stream::all_gather, "AG b"));
  g.add_op(op(graph::OpKind::optimizer, graph::Stream::compute, "optimizer"));
  graph::Timeline t(3, 1);
  t.at(0, 0) = {0, 1};
  t.at(1, 0) = {0.5, 2.5};
  t.at(2, 0) = {2, 3};
  config::ScenarioConfig s;
  s.cluster.topology = test::minimal_topology();
  model::Model m;
  const auto sum = report::summarize({s, m, g, t});
  CHECK(sum.step_time == doctest::Approx(3.0).scale(0));
  CHECK(sum.compute_s == doctest::Approx(2.0).scale(0));
  CHECK(sum.comm_s == doctest::Approx(2.0).scale(0));
  CHECK(sum.exposed_comm_s == doctest::Approx(1.0).scale(0));
  CHECK(sum.tokens_per_s_per_gpu == doctest::Approx(1000.0 / 3.0).scale(0));
}

TEST_CASE("the memory timeline adds allocations and frees in time order, frees first on ties") {
  constexpr double MiB = 1 << 20;
  graph::StepGraph g;
  g.info.world_size = 1;
  g.info.initial_memory = {{graph::MemCategory::sharded_params, 100 * MiB, false, graph::Pool::compute}};
  auto a = op(graph::OpKind::forward, graph::Stream::compute, "A");
  a.memory = {{graph::MemCategory::activations, 10 * MiB, false}, {graph::MemCategory::activations, -10 * MiB, true}};
  auto b = op(graph::OpKind::forward, graph::Stream::compute, "B");
  b.memory = {{graph::MemCategory::unsharded_params, 5 * MiB, false}, {graph::MemCategory::unsharded_params, -5 * MiB, true}};
  auto c = op(graph::OpKind::forward, graph::Stream::compute, "C");
  c.memory = {{graph::MemCategory::activations, 7 * MiB, false}, {graph::MemCategory::activations, -7 * MiB, true}};
  g.add_op(a);
  g.add_op(b);
  g.add_op(c);
  graph::Timeline t(3, 1);
  t.at(0, 0) = {0, 1};    // A holds 10 MiB over [0, 1]
  t.at(1, 0) = {0.5, 2};  // B holds 5 MiB over [0.5, 2]
  t.at(2, 0) = {1, 3};    // C starts as A ends: A's 10 MiB is freed before C's 7 MiB arrives
  const auto m = report::memory_timeline(g, t, 0);
  CHECK(m.peak == doctest::Approx(115 * MiB).scale(0));
  CHECK(m.peak_time == doctest::Approx(0.5).scale(0));
  CHECK(m.peak_op == "B");
  CHECK(m.points.back().total() == doctest::Approx(100 * MiB).scale(0));
  // c10's segment sizes: 100 MiB and 10 MiB requests get segments of their size rounded to 2 MiB;
  // a 5 MiB request (1-10 MiB) gets a 20 MiB segment; C's 7 MiB then fits in A's freed 10 MiB.
  CHECK(m.peak_reserved == doctest::Approx((100 + 10 + 20) * MiB).scale(0));
}

TEST_CASE("each stream's pool keeps its own high-water mark, sizes round up to 512-byte blocks") {
  // 10 MiB on the compute stream, freed; then 4 MiB on the reduce-scatter stream. Allocated never
  // exceeds 10 MiB, but the compute pool keeps its 10 MiB cached and the reduce-scatter stream
  // cannot use them (d1-hand-model.md: per-stream pools).
  constexpr double MiB = 1 << 20;
  graph::StepGraph g;
  g.info.world_size = 1;
  auto a = op(graph::OpKind::forward, graph::Stream::compute, "A");
  a.memory = {{graph::MemCategory::activations, 10 * MiB, false, graph::Pool::compute},
              {graph::MemCategory::activations, -10 * MiB, true, graph::Pool::compute}};
  auto b = op(graph::OpKind::reduce_scatter, graph::Stream::reduce_scatter, "B");
  b.memory = {{graph::MemCategory::reduce_buffers, 4 * MiB, false, graph::Pool::reduce_scatter},
              {graph::MemCategory::reduce_buffers, -4 * MiB, true, graph::Pool::reduce_scatter}};
  auto c = op(graph::OpKind::forward, graph::Stream::compute, "C");
  c.memory = {{graph::MemCategory::activations, 100, false, graph::Pool::compute}};
  g.add_op(a);
  g.add_op(b);
  g.add_op(c);
  graph::Timeline t(3, 1);
  t.at(0, 0) = {0, 1};
  t.at(1, 0) = {2, 3};
  t.at(2, 0) = {4, 5};
  const auto m = report::memory_timeline(g, t, 0);
  CHECK(m.peak == doctest::Approx(10 * MiB).scale(0));
  // 10 MiB gets its own 10 MiB segment; the 4 MiB request on the other stream cannot use it and
  // gets a 20 MiB segment (1-10 MiB requests); C's 100 bytes need a 2 MiB small-pool segment.
  CHECK(m.peak_reserved == doctest::Approx((10 + 20 + 2) * MiB).scale(0));
  CHECK(m.reserved_by_pool[static_cast<std::size_t>(graph::Pool::reduce_scatter)] == doctest::Approx(20 * MiB).scale(0));
  CHECK(m.points.back().total() == doctest::Approx(512).scale(0));  // 100 bytes take a 512-byte block
}

TEST_CASE("with the GPU's capacity, the allocator releases its cache before it fails, and counts both") {
  // Capacity 60 MiB. A holds 40 MiB on the compute stream and frees it; B then asks 30 MiB on the
  // reduce-scatter stream, which cannot reuse A's cached segment: 40 + 30 > 60, so the cache is
  // released (one retry) and B's segment fits (30 MiB reserved). C asks 40 MiB more while B is
  // live: 30 + 40 > 60 with nothing cached to release: a second retry, and a failure (CUDA OOM).
  // Segment sizes as c10 rounds them: requests of 10 MiB or more round up to 2 MiB.
  constexpr double MiB = 1 << 20;
  graph::StepGraph g;
  g.info.world_size = 1;
  auto a = op(graph::OpKind::forward, graph::Stream::compute, "A");
  a.memory = {{graph::MemCategory::activations, 40 * MiB, false, graph::Pool::compute},
              {graph::MemCategory::activations, -40 * MiB, true, graph::Pool::compute}};
  auto b = op(graph::OpKind::reduce_scatter, graph::Stream::reduce_scatter, "B");
  b.memory = {{graph::MemCategory::reduce_buffers, 30 * MiB, false, graph::Pool::reduce_scatter},
              {graph::MemCategory::reduce_buffers, -30 * MiB, true, graph::Pool::reduce_scatter}};
  auto c = op(graph::OpKind::forward, graph::Stream::compute, "C");
  c.memory = {{graph::MemCategory::activations, 40 * MiB, false, graph::Pool::compute}};
  g.add_op(a);
  g.add_op(b);
  g.add_op(c);
  graph::Timeline t(3, 1);
  t.at(0, 0) = {0, 1};
  t.at(1, 0) = {2, 4};
  t.at(2, 0) = {3, 5};
  const auto m = report::memory_timeline(g, t, 0, 1024, 60 * MiB);
  CHECK(m.alloc_retries == 2);
  CHECK(m.alloc_failures == 1);
  // The high-water mark is C's failed allocation on top of B: 70 MiB; before it, 40 MiB.
  CHECK(m.peak_reserved == doctest::Approx(70 * MiB).scale(0));
  // Without a capacity nothing is released, and C reuses A's cached segment on the compute
  // stream: 40 + 30 = 70 MiB, no retry. (Releasing the cache for B is what left C without it, as
  // in PyTorch.) With 70 MiB of room, the same.
  const auto unlimited = report::memory_timeline(g, t, 0);
  CHECK(unlimited.alloc_retries == 0);
  CHECK(unlimited.peak_reserved == doctest::Approx(70 * MiB).scale(0));
  const auto roomy = report::memory_timeline(g, t, 0, 1024, 70 * MiB);
  CHECK(roomy.alloc_retries == 0);
  CHECK(roomy.alloc_failures == 0);
}

TEST_CASE("who waits for whom: lengths of time within the step, never sums of concurrent waits") {
  // Rank 2 arrives last at two collectives running on concurrent streams. Collective A: ranks 0
  // and 1 arrive at 1.0 s and 1.2 s, rank 2 at 2.0 s. Collective B: ranks 0 and 1 at 1.5 s,
  // rank 2 at 2.0 s. Both launch at 2.0 s. Summed, the waits would be (1.0 + 0.8) + (0.5 + 0.5)
  // = 2.8 s; as time, rank 2 held collectives up from 1.0 s to 2.0 s: 1.0 s. Rank 0 waited 1.0 s
  // for it, rank 1 0.8 s: 0.9 s on average, 1.0 s at most.
  using graph::Interval;
  const std::vector<std::vector<Interval>> waiting{{{1.0, 2.0}, {1.5, 2.0}}, {{1.2, 2.0}, {1.5, 2.0}}, {}};
  const std::vector<std::vector<Interval>> holding{{}, {}, {{1.0, 2.0}, {1.5, 2.0}}};
  auto w = report::rank_waits(graph::Timeline(0, 3), waiting, holding, 0.0, 3.0);
  REQUIRE(w.size() == 1);
  CHECK(w[0].rank == 2);
  CHECK(w[0].caused_s == doctest::Approx(1.0).scale(0));
  CHECK(w[0].waited_s == doctest::Approx(0.0));
  CHECK(w[0].others_waited_mean_s == doctest::Approx(0.9).scale(0));
  CHECK(w[0].others_waited_max_s == doctest::Approx(1.0).scale(0));
  // Only what falls in the reported step counts: [0, 1.5] keeps 0.5 s of holding, rank 0's
  // 0.5 s and rank 1's 0.3 s of waiting.
  w = report::rank_waits(graph::Timeline(0, 3), waiting, holding, 0.0, 1.5);
  REQUIRE(w.size() == 1);
  CHECK(w[0].caused_s == doctest::Approx(0.5).scale(0));
  CHECK(w[0].others_waited_mean_s == doctest::Approx(0.4).scale(0));
  CHECK(w[0].others_waited_max_s == doctest::Approx(0.5).scale(0));
}

TEST_CASE("the peak memory figures carry the 90% ranges of the published runs' memory errors") {
  // One op holding 1 GiB on rank 0: peak allocated 1 GiB, reserved the same (one 1 GiB block).
  constexpr double GiB = 1024.0 * 1024 * 1024;
  graph::StepGraph g;
  g.info.world_size = 1;
  g.info.tokens_per_micro_step = 1000;
  graph::Op a = op(graph::OpKind::forward, graph::Stream::compute, "FWD a");
  a.memory = {{graph::MemCategory::activations, GiB, false}, {graph::MemCategory::activations, -GiB, true}};
  g.add_op(a);
  graph::Timeline t(1, 1);
  t.at(0, 0) = {0, 1};
  config::ScenarioConfig s;
  s.cluster.topology = test::minimal_topology();
  model::Model m;
  const auto sum = report::summarize({s, m, g, t});
  REQUIRE(sum.memory.peak == doctest::Approx(GiB).scale(1));
  // predicted = measured x (1 + e): the measured figure in [predicted / (1 + e_high), predicted / (1 + e_low)].
  for (const auto& [range, measure, predicted] : {std::tuple{sum.reserved_range, report::Measure::reserved, sum.memory.peak_reserved},
                                                  std::tuple{sum.allocated_range, report::Measure::allocated, sum.memory.peak}}) {
    const auto band = report::memory_band(report::builtin_residuals(), measure);
    REQUIRE(band.runs >= 10);  // validation/residuals.csv holds the ledger's memory rows
    CHECK(range.runs == band.runs);
    CHECK(range.low == doctest::Approx(predicted / (1 + band.error_high)).scale(1));
    CHECK(range.high == doctest::Approx(predicted / (1 + band.error_low)).scale(1));
    CHECK(range.low < predicted);
    CHECK(range.high > predicted);
  }
  const auto json = report::summary_json(sum);
  CHECK(json.at("peak_allocated_bytes_range").at(0).get<double>() == doctest::Approx(sum.allocated_range.low).scale(1));
  CHECK(json.at("peak_memory_bytes_range").at(1).get<double>() == doctest::Approx(sum.reserved_range.high).scale(1));
}

TEST_CASE("a GPU no published run used says its throughput range is other GPUs' runs") {
  // validation/residuals.csv holds no Blackwell run: its band pools every run without float8 and
  // says none was on its GPUs; a Hopper run has five and more of its own and says nothing more.
  graph::StepGraph g;
  g.info.world_size = 1;
  g.info.tokens_per_micro_step = 1000;
  graph::Op a = op(graph::OpKind::forward, graph::Stream::compute, "FWD a");
  g.add_op(a);
  graph::Timeline t(1, 1);
  t.at(0, 0) = {0, 1};
  config::ScenarioConfig s;
  s.cluster.topology = test::minimal_topology();
  s.cluster.topology.gpu.arch = config::GpuArch::blackwell;
  model::Model m;
  const auto blackwell = report::summarize({s, m, g, t});
  REQUIRE(blackwell.range_runs > 0);
  CHECK(blackwell.range_gpu_runs == 0);
  CHECK(blackwell.range_basis == "runs without float8, none on blackwell GPUs");
  CHECK(report::summary_text(blackwell, s).find("not validated on this GPU") != std::string::npos);
  CHECK(report::summary_json(blackwell).at("range_basis").at("gpu_runs").get<int>() == 0);
  s.cluster.topology.gpu.arch = config::GpuArch::hopper;
  const auto hopper = report::summarize({s, m, g, t});
  REQUIRE(hopper.range_runs >= 5);
  CHECK(hopper.range_gpu_runs == -1);
  CHECK(report::summary_text(hopper, s).find("not validated") == std::string::npos);
  CHECK(report::summary_json(hopper).at("range_basis").at("gpu_runs").is_null());
}

TEST_CASE("a range wholly above or below its prediction says which way the published runs erred") {
  // The pipelined runs' reserved memory was all under-predicted (-28 to -11 %): a pipelined job's
  // range then lies above its prediction, which the summary must say rather than leave a reader
  // to wonder; a range around the prediction says nothing more.
  graph::StepGraph g;
  g.info.world_size = 1;
  g.info.tokens_per_micro_step = 1000;
  g.add_op(op(graph::OpKind::forward, graph::Stream::compute, "FWD a"));
  graph::Timeline t(1, 1);
  t.at(0, 0) = {0, 1};
  config::ScenarioConfig s;
  s.cluster.topology = test::minimal_topology();
  model::Model m;
  auto sum = report::summarize({s, m, g, t});
  REQUIRE(sum.range_runs > 0);
  sum.tokens_per_s_per_gpu = 1000;
  sum.tokens_range_low = 900;
  sum.tokens_range_high = 1100;
  CHECK(report::summary_text(sum, s).find("the prediction") == std::string::npos);
  sum.memory.peak_reserved = 56.0 * (1 << 30);
  sum.reserved_range = {63.1 * (1 << 30), 77.3 * (1 << 30), 6, "reserved memory of pipelined runs"};
  const std::string above = report::summary_text(sum, s);
  CHECK(above.find("63.1 - 77.3 GiB  (from the errors on 6 published runs: reserved memory of pipelined runs; docs/fidelity.md)  ->  all "
                   "above the prediction") != std::string::npos);
  sum.tokens_range_low = 400;
  sum.tokens_range_high = 500;
  CHECK(report::summary_text(sum, s).find("all below the prediction") != std::string::npos);
}
