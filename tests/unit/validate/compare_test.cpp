// compare's figures against timelines worked by hand.
#include "validate/compare.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "test_support.hpp"
#include "validate/kineto.hpp"

using namespace shardsim;

namespace {

// Four ops on one rank: AG (nccl), FWD, BWD (compute), RS (nccl); times in ms.
graph::TimelineFile timeline(const std::array<std::pair<double, double>, 4>& t, const char* source) {
  graph::TimelineFile f;
  f.meta = {source, source == std::string("simulated") ? "simgrid" : "cpu", ""};
  f.scenario = "hand";
  f.world_size = 1;
  f.steps = 1;
  f.ops = {{0, "AG", graph::OpKind::all_gather, graph::Stream::nccl, 0, 0},
           {1, "FWD", graph::OpKind::forward, graph::Stream::compute, 0, 0},
           {2, "BWD", graph::OpKind::backward, graph::Stream::compute, 0, 0},
           {3, "RS", graph::OpKind::reduce_scatter, graph::Stream::nccl, 0, 0}};
  f.timeline = graph::Timeline(4, 1);
  for (int i = 0; i < 4; ++i)
    f.timeline.at(i, 0) = {t[static_cast<std::size_t>(i)].first * 1e-3, t[static_cast<std::size_t>(i)].second * 1e-3};
  return f;
}

validate::Trace kineto_fixture() {
  return validate::load_trace(test::source_dir() / "tests/data/kineto_fsdp_small.json");
}

}  // namespace

TEST_CASE("compare by op id: step time, busy, exposed communication, overlap and op errors") {
  // simulated: AG [0,1] FWD [1,3] BWD [3,6] RS [5,7];  measured: AG [0,2] FWD [2,4] BWD [4,8] RS [7,8]
  const auto sim = validate::trace_from_timeline(timeline({{{0, 1}, {1, 3}, {3, 6}, {5, 7}}}, "simulated"), "sim.json");
  const auto meas = validate::trace_from_timeline(timeline({{{0, 2}, {2, 4}, {4, 8}, {7, 8}}}, "measured"), "meas.json");
  const auto c = validate::compare(sim, meas, 0);
  CHECK(c.by_op_id);
  CHECK(c.simulated.step_time == doctest::Approx(7e-3));
  CHECK(c.measured.step_time == doctest::Approx(8e-3));
  CHECK(c.simulated.compute_busy == doctest::Approx(5e-3));  // [1, 6]
  CHECK(c.measured.compute_busy == doctest::Approx(6e-3));   // [2, 8]
  CHECK(c.simulated.comm_busy == doctest::Approx(3e-3));
  CHECK(c.measured.comm_busy == doctest::Approx(3e-3));
  // simulated: AG [0,1] and RS's tail [6,7] are exposed; measured: AG [0,2], RS under BWD.
  CHECK(c.simulated.exposed_comm == doctest::Approx(2e-3));
  CHECK(c.measured.exposed_comm == doctest::Approx(2e-3));
  CHECK(c.simulated.overlap == doctest::Approx(1.0 / 3));
  CHECK(c.measured.overlap == doctest::Approx(1.0 / 3));
  // |1-2| + |2-2| + |3-4| + |2-1| = 3 ms over 9 ms measured; start offsets 0, 1, 1, 2 ms.
  CHECK(c.ops_compared == 4);
  CHECK(c.op_time_error == doctest::Approx(3.0 / 9));
  CHECK(c.mean_start_offset == doctest::Approx(1e-3));
  REQUIRE(c.largest.size() == 4);
  CHECK(c.largest.back().name == "FWD");
  const auto j = validate::comparison_json(c);
  CHECK(j["step_time_error"].get<double>() == doctest::Approx(-0.125));
  CHECK(j["kinds"]["backward"]["error"].get<double>() == doctest::Approx(-0.25));
  CHECK(j["kinds"]["reduce_scatter"]["error"].get<double>() == doctest::Approx(1.0));
  const std::string svg = validate::comparison_svg(sim, meas, c);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("<title>BWD 4.000 ms</title>") != std::string::npos);
}

TEST_CASE("timelines of different graphs are refused") {
  auto other = timeline({{{0, 2}, {2, 4}, {4, 8}, {7, 8}}}, "measured");
  other.ops[2].name = "BWD layers.9";
  const auto sim = validate::trace_from_timeline(timeline({{{0, 1}, {1, 3}, {3, 6}, {5, 7}}}, "simulated"), "sim.json");
  const auto meas = validate::trace_from_timeline(other, "meas.json");
  try {
    (void)validate::compare(sim, meas, 0);
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "meas.json: error: ops: op 2 is \"BWD layers.9\" here and \"BWD\" in sim.json; expected timelines of the same graph (shardsim "
          "export)");
  }
  CHECK_THROWS_AS((void)validate::compare(sim, sim, 3), ConfigError);  // no rank 3
}

TEST_CASE("kernel names are classed as PyTorch profiler traces name them") {
  using validate::ActivityClass;
  CHECK(validate::classify_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)").cls == ActivityClass::all_gather);
  CHECK(validate::classify_kernel("ncclKernel_ReduceScatter_RING_LL_Sum_bfloat16").cls == ActivityClass::reduce_scatter);
  CHECK(validate::classify_kernel("ncclDevKernel_AllReduce_Sum_f32_TREE_LL").cls == ActivityClass::all_reduce);
  CHECK(validate::classify_kernel("ncclDevKernel_SendRecv").cls == ActivityClass::other_comm);
  CHECK(validate::classify_kernel("sm90_xmma_gemm_bf16bf16_bf16f32").kind == "gemm");
  CHECK(validate::classify_kernel("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN").kind == "gemm");
  CHECK(validate::classify_kernel("void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm>").kind == "gemm");
  CHECK(validate::classify_kernel("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel").kind == "attention");
  CHECK(validate::classify_kernel("void at::native::vectorized_elementwise_kernel<4>").kind == "other");
}

TEST_CASE("a Kineto trace: kernels by stream and class, two profiler steps") {
  const auto t = kineto_fixture();
  CHECK_FALSE(t.has_op_ids);
  CHECK(t.steps == 2);
  REQUIRE(t.ranks.size() == 1);
  CHECK(t.ranks[0].size() == 9);  // 8 kernels and a memcpy; CPU ops, annotations and instants left out
  // Relative to the first kernel (ts 900 us). Compute: [100,700] + [1200,1250] + [1300,1900] us
  // = 1250 us; comm: AG [0,300], RS [700,1200], AR [1800,2000] = 1000 us; exposed: [0,100],
  // [700,1200], [1900,2000] = 700 us. Two profiler steps: halve everything.
  const auto m = validate::step_metrics(t, 0, true);
  CHECK(m.step_time == doctest::Approx(1000e-6));
  CHECK(m.compute_busy == doctest::Approx(625e-6));
  CHECK(m.comm_busy == doctest::Approx(500e-6));
  CHECK(m.exposed_comm == doctest::Approx(350e-6));
  CHECK(m.overlap == doctest::Approx(0.3));
  CHECK(m.busy_by_kind.at("all_gather") == doctest::Approx(150e-6));
  CHECK(m.busy_by_kind.at("reduce_scatter") == doctest::Approx(250e-6));
  CHECK(m.busy_by_kind.at("all_reduce") == doctest::Approx(100e-6));
  const auto kinds = validate::step_metrics(t, 0, false);
  CHECK(kinds.count_by_kind.at("gemm") == 3);
  CHECK(kinds.count_by_kind.at("attention") == 1);
  CHECK(kinds.count_by_kind.at("other") == 2);
  CHECK(kinds.busy_by_kind.at("gemm") == doctest::Approx(450e-6));  // (300 + 400 + 200) / 2
}

TEST_CASE("a simulated timeline against a Kineto trace is compared by class") {
  const auto sim = validate::trace_from_timeline(timeline({{{0, 0.1}, {0.1, 0.5}, {0.5, 1.0}, {0.9, 1.1}}}, "simulated"), "sim.json");
  const auto c = validate::compare(sim, kineto_fixture(), 0);
  CHECK_FALSE(c.by_op_id);
  CHECK(c.simulated.step_time == doctest::Approx(1.1e-3));
  CHECK(c.measured.step_time == doctest::Approx(1.0e-3));
  // Classes on both sides: forward + backward = compute 0.9 ms against the trace's 0.625 ms.
  bool found = false;
  for (const auto& k : c.kinds) {
    if (k.kind != "compute") continue;
    found = true;
    CHECK(k.simulated == doctest::Approx(0.9e-3));
    CHECK(k.measured == doctest::Approx(0.625e-3));
  }
  CHECK(found);
}

TEST_CASE("files that are neither timelines nor traces are refused with their name") {
  test::TempFile bad("bad.json", R"({"format": "something-else"})");
  try {
    (void)validate::load_trace(bad.path());
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find(bad.str() + ": error: format: expected a shardsim-timeline") == 0);
  }
  test::TempFile empty("empty.json", R"({"traceEvents": []})");
  CHECK_THROWS_AS((void)validate::load_trace(empty.path()), ConfigError);
  test::TempFile junk("junk.json", "{not json");
  CHECK_THROWS_AS((void)validate::load_trace(junk.path()), ConfigError);
}
