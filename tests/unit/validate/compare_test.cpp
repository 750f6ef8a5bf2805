// compare's figures against timelines worked by hand.
#include "validate/compare.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "test_support.hpp"
#include "validate/comm_table.hpp"
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
  CHECK(c.simulated.step_time == doctest::Approx(7e-3).scale(0));
  CHECK(c.measured.step_time == doctest::Approx(8e-3).scale(0));
  CHECK(c.simulated.compute_busy == doctest::Approx(5e-3).scale(0));  // [1, 6]
  CHECK(c.measured.compute_busy == doctest::Approx(6e-3).scale(0));   // [2, 8]
  CHECK(c.simulated.comm_busy == doctest::Approx(3e-3).scale(0));
  CHECK(c.measured.comm_busy == doctest::Approx(3e-3).scale(0));
  // simulated: AG [0,1] and RS's tail [6,7] are exposed; measured: AG [0,2], RS under BWD.
  CHECK(c.simulated.exposed_comm == doctest::Approx(2e-3).scale(0));
  CHECK(c.measured.exposed_comm == doctest::Approx(2e-3).scale(0));
  CHECK(c.simulated.overlap == doctest::Approx(1.0 / 3).scale(0));
  CHECK(c.measured.overlap == doctest::Approx(1.0 / 3).scale(0));
  // |1-2| + |2-2| + |3-4| + |2-1| = 3 ms over 9 ms measured; start offsets 0, 1, 1, 2 ms.
  CHECK(c.ops_compared == 4);
  CHECK(c.op_time_error == doctest::Approx(3.0 / 9).scale(0));
  CHECK(c.mean_start_offset == doctest::Approx(1e-3).scale(0));
  REQUIRE(c.largest.size() == 4);
  CHECK(c.largest.back().name == "FWD");
  const auto j = validate::comparison_json(c);
  CHECK(j["step_time_error"].get<double>() == doctest::Approx(-0.125).scale(0));
  CHECK(j["kinds"]["backward"]["error"].get<double>() == doctest::Approx(-0.25).scale(0));
  CHECK(j["kinds"]["reduce_scatter"]["error"].get<double>() == doctest::Approx(1.0).scale(0));
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
  CHECK(validate::classify_kernel("ncclDevKernel_SendRecv").cls == ActivityClass::send_recv);
  // NCCL >= 2.19 and RCCL run many collectives in one generic kernel: communication, of no known kind.
  CHECK(validate::classify_kernel("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)").cls == ActivityClass::other_comm);
  CHECK(validate::classify_kernel("ncclDevKernel_Generic_4(ncclDevComm*, channelMasks, ncclWork*)").cls == ActivityClass::other_comm);
  CHECK(validate::classify_kernel("ncclKernel_AllReduce_RING_LL_Sum_bf16(ncclDevComm*, unsigned long, ncclWork*)").cls ==
        ActivityClass::all_reduce);
  // ROCm: hipBLASLt/Tensile GEMMs and MIOpen's implicit-GEMM convolutions (as in the MI300X trace).
  CHECK(validate::classify_kernel("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x128_MI16x16x1").kind == "gemm");
  CHECK(validate::classify_kernel("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x64x32_wt32x32x8").kind == "gemm");
  CHECK(validate::classify_kernel("sm90_xmma_gemm_bf16bf16_bf16f32").kind == "gemm");
  CHECK(validate::classify_kernel("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN").kind == "gemm");
  CHECK(validate::classify_kernel("void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm>").kind == "gemm");
  CHECK(validate::classify_kernel("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel").kind == "attention");
  CHECK(validate::classify_kernel("void at::native::vectorized_elementwise_kernel<4>").kind == "other");
}

TEST_CASE("a Kineto trace: CPU ProfilerSteps place each step from its first GPU op to the next step's") {
  const auto t = kineto_fixture();
  CHECK_FALSE(t.has_op_ids);
  REQUIRE(t.ranks.size() == 1);
  CHECK(t.ranks[0].rank == 0);  // distributedInfo.rank
  CHECK(t.world_size == 2);
  CHECK(t.ranks[0].activities.size() == 9);  // 8 kernels and a memcpy; CPU ops, annotations and instants left out
  // Step 1 launched AG, GEMM, flash, add, RS (launches at 850..890 us, inside [800, 1800]): its
  // first GPU op starts at 900. Step 2 launched memcpy, two GEMMs, AR: first at 2100. Step 2 is
  // the last: it lasts its CPU span (1100 us), longer than its GPU ops (2100..2900).
  REQUIRE(t.ranks[0].steps.size() == 2);
  CHECK(t.ranks[0].steps[0].start == doctest::Approx(900e-6).scale(0));
  CHECK(t.ranks[0].steps[0].end == doctest::Approx(2100e-6).scale(0));
  CHECK(t.ranks[0].steps[1].end == doctest::Approx(3200e-6).scale(0));
  const auto steps = validate::rank_step_metrics(t, 0);
  // Step 1, [900, 2100]: compute GEMM [1000,1300] flash [1300,1500] add [1500,1600] = 600 us;
  // comm AG [900,1200] + RS [1600,2100] = 800 us, exposed [900,1000] + [1600,2100] = 600 us; no idle.
  CHECK(steps[0].step_time == doctest::Approx(1200e-6).scale(0));
  CHECK(steps[0].compute_busy == doctest::Approx(600e-6).scale(0));
  CHECK(steps[0].comm_busy == doctest::Approx(800e-6).scale(0));
  CHECK(steps[0].exposed_comm == doctest::Approx(600e-6).scale(0));
  CHECK(steps[0].idle == doctest::Approx(0.0));
  // Step 2, [2100, 3200]: memcpy [2100,2150], GEMMs [2200,2800] = 650 us; AR [2700,2900] = 200
  // us, exposed [2800,2900] = 100 us; idle [2150,2200] + [2900,3200] = 350 us.
  CHECK(steps[1].step_time == doctest::Approx(1100e-6).scale(0));
  CHECK(steps[1].compute_busy == doctest::Approx(650e-6).scale(0));
  CHECK(steps[1].exposed_comm == doctest::Approx(100e-6).scale(0));
  CHECK(steps[1].idle == doctest::Approx(350e-6).scale(0));
  REQUIRE(steps[1].longest_gaps.size() == 2);
  CHECK(steps[1].longest_gaps[0].start == doctest::Approx(800e-6).scale(0));  // 2900 - 2100
  CHECK(steps[1].longest_gaps[0].length == doctest::Approx(300e-6).scale(0));
  CHECK(steps[0].count_by_kind.at("gemm") == 1);
  CHECK(steps[0].count_by_kind.at("attention") == 1);
  CHECK(steps[0].count_by_kind.at("other") == 1);
  CHECK(steps[1].count_by_kind.at("gemm") == 2);  // xmma and s16816gemm
  CHECK(steps[1].count_by_kind.at("memcpy") == 1);
  const auto m = validate::mean_metrics(steps);
  CHECK(m.step_time == doctest::Approx(1150e-6).scale(0));
  CHECK(m.comm_busy == doctest::Approx(500e-6).scale(0));
  CHECK(m.exposed_comm == doctest::Approx(350e-6).scale(0));
  CHECK(m.overlap == doctest::Approx(0.3).scale(0));  // 1 - 350 / 500
  CHECK(m.busy_by_class.at("all_gather") == doctest::Approx(150e-6).scale(0));
  CHECK(m.busy_by_class.at("reduce_scatter") == doctest::Approx(250e-6).scale(0));
  CHECK(m.busy_by_class.at("all_reduce") == doctest::Approx(100e-6).scale(0));
  CHECK(m.busy_by_kind.at("gemm") == doctest::Approx(450e-6).scale(0));  // (300 + 400 + 200) / 2
}

TEST_CASE("collective kernel arguments come before names: kind, bytes, group and bandwidth") {
  const auto t = kineto_fixture();
  // The all-gather runs as ncclDevKernel_Generic, a name that says nothing; its arguments say
  // _allgather_base of 2097152 BFloat16 out = 4 MiB in group mesh_dp_shard of 2 ranks.
  const auto& first = t.ranks[0].activities.front();
  CHECK(first.cls == validate::ActivityClass::all_gather);
  REQUIRE(first.coll >= 0);
  const auto& c = t.collectives[static_cast<std::size_t>(first.coll)];
  CHECK(c.bytes == 4194304.0);
  CHECK(c.group == "mesh_dp_shard (1)");
  CHECK(c.group_size == 2);
  CHECK(c.group_ranks == std::vector<int>{0, 1});
  const auto sizes = validate::size_rows(t, 0, {});
  REQUIRE(sizes.size() == 1);  // the RS and AR kernels carry no arguments: no size
  CHECK(sizes[0].count == 1);
  CHECK(sizes[0].mean_time == doctest::Approx(300e-6).scale(0));
  CHECK(sizes[0].algbw == doctest::Approx(4194304.0 / 300e-6).scale(0));        // 13.98 GB/s
  CHECK(sizes[0].busbw == doctest::Approx(4194304.0 / 300e-6 / 2.0).scale(0));  // x (n-1)/n, n = 2
  const auto groups = validate::group_rows(t, 0);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].group == "(not recorded)");  // RS: 500 us over 2 steps, the most time
  CHECK(groups[0].time_per_step == doctest::Approx(250e-6).scale(0));
}

TEST_CASE("a simulated timeline against a Kineto trace is compared by class") {
  const auto sim = validate::trace_from_timeline(timeline({{{0, 0.1}, {0.1, 0.5}, {0.5, 1.0}, {0.9, 1.1}}}, "simulated"), "sim.json");
  const auto c = validate::compare(sim, kineto_fixture(), 0);
  CHECK_FALSE(c.by_op_id);
  CHECK(c.simulated.step_time == doctest::Approx(1.1e-3).scale(0));
  CHECK(c.measured.step_time == doctest::Approx(1.15e-3).scale(0));  // the mean of 1.2 and 1.1 ms
  // Classes on both sides: forward + backward = compute 0.9 ms against the trace's 0.625 ms.
  bool found = false;
  for (const auto& k : c.kinds) {
    if (k.kind != "compute") continue;
    found = true;
    CHECK(k.simulated == doctest::Approx(0.9e-3).scale(0));
    CHECK(k.measured == doctest::Approx(0.625e-3).scale(0));
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

TEST_CASE("a timeline of chosen ranks is compared on its ranks, and names them when one is missing") {
  // A pipelined run's timeline keeps the first ranks of every stage: here ranks 0 and 4 of 8, in
  // columns 0 and 1. Rank 4's ops end 1 ms later than rank 0's.
  auto two = [](const char* source) {
    auto f = timeline({{{0, 1}, {1, 3}, {3, 6}, {5, 7}}}, source);
    f.world_size = 8;
    f.ranks = {0, 4};
    graph::Timeline t(4, 2);
    for (int i = 0; i < 4; ++i) {
      t.at(i, 0) = f.timeline.at(i, 0);
      t.at(i, 1) = {f.timeline.at(i, 0).start + 1e-3, f.timeline.at(i, 0).end + 1e-3};
    }
    f.timeline = t;
    return f;
  };
  const auto sim = validate::trace_from_timeline(two("simulated"), "sim.json");
  const auto meas = validate::trace_from_timeline(two("measured"), "meas.json");
  REQUIRE(sim.ranks.size() == 2);
  CHECK(sim.ranks[1].rank == 4);
  CHECK(validate::compare(sim, meas, 4).simulated.step_time ==
        doctest::Approx(8e-3).scale(0));  // [0, 8] ms: the step ends with rank 4's RS
  try {
    (void)validate::compare(sim, meas, 2);
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "sim.json: error: ranks: the simulated trace holds ranks 0, 4; expected rank 2 (--rank)");
  }
}
