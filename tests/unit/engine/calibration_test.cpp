// A calibration changes the prediction exactly as its numbers say: each case runs one simulation
// (one SimGrid engine per process) and checks op times against the calibration's formulas.
#include <doctest/doctest.h>

#include "collective_support.hpp"
#include "config/topology.hpp"
#include "engine/calibrated_compute.hpp"
#include "engine/calibrated_ring.hpp"
#include "engine/simulator.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

config::TopologyConfig dgx_h100() {
  return config::load_topology(test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml", ConfigNode{}, "");
}

graph::Op collective(graph::OpKind kind, double bytes) {
  graph::Op op;
  op.kind = kind;
  op.stream = graph::Stream::nccl;
  op.name = "collective";
  op.group = graph::Group::shard;
  op.bytes = bytes;
  return op;
}

config::CalibrationConfig calibration() {
  config::CalibrationConfig c;
  c.gemm = config::GemmCalibration{500e12, 4e9};
  c.memory_bandwidth = 2e12;
  c.kernel_launch = 5e-6;
  c.collectives[0][0] = config::CollectiveCalibration{20e-6, 3e-6, 100e9, {}};  // nvlink all-gather
  c.collectives[1][1] = config::CollectiveCalibration{30e-6, 6e-6, 200e9, {}};  // nic reduce-scatter
  return c;
}

engine::SimulationResult run(graph::StepGraph& g, int nodes) {
  const auto topo = dgx_h100();
  const auto cal = calibration();
  const engine::RooflineModel compute(engine::calibrated_rates(engine::ComputeRates::nominal(topo, true), cal));
  const auto ring = test::collectives(topo, test::collectives_settings("ring", "simple"));  // NCCL's ring, Simple
  const engine::CalibratedRing calibrated(ring, cal);
  return engine::simulate(engine::SimulationInput{g, topo, nodes, compute, calibrated});
}

// One rank's step of one forward op doing `w`.
graph::StepGraph one_forward(const graph::Work& w) {
  graph::StepGraph g;
  g.info.world_size = 1;
  g.info.shard_group = 1;
  graph::Op op;
  op.kind = graph::OpKind::forward;
  op.name = "FWD";
  op.work = w;
  g.add_op(op);
  return g;
}

}  // namespace

TEST_CASE("calibrated all-gather on one node: base + 7 hops + (n-1)/n S / bus bandwidth") {
  graph::StepGraph g;
  g.info.world_size = 8;
  g.info.shard_group = 8;
  g.add_op(collective(graph::OpKind::all_gather, 1e9));
  const auto r = run(g, 1);
  const double expected = 20e-6 + 7 * 3e-6 + 7.0 / 8.0 * 1e9 / 100e9;  // 8.791 ms
  for (int rank = 0; rank < 8; ++rank) CHECK(r.timeline.at(0, rank).end == doctest::Approx(expected).epsilon(1e-6).scale(0));
}

TEST_CASE("calibrated reduce-scatter over two nodes: the NIC ring at its measured bus bandwidth") {
  graph::StepGraph g;
  g.info.world_size = 16;
  g.info.shard_group = 16;
  g.add_op(collective(graph::OpKind::reduce_scatter, 1e9));
  const auto r = run(g, 2);
  // 15 steps, one crossing nodes at the calibrated NIC hop (6 us); 14 NVLink steps at the
  // topology's 1 us (no nvlink reduce-scatter entry). Bandwidth: the NIC share at 200 GB/s bus
  // bandwidth (15/16 S / 200 GB/s = 4.6875 ms) against the NVLink share at the topology's
  // 360 GB/s (15/16 x 7/8 S / 360 GB/s = 2.28 ms): the NICs bound it.
  const double expected = 30e-6 + 14 * 1e-6 + 6e-6 + 15.0 / 16.0 * 1e9 / 200e9;
  CHECK(r.timeline.at(0, 0).end == doctest::Approx(expected).epsilon(1e-6).scale(0));
}

TEST_CASE("a collective kind the calibration lacks keeps the topology's ring cost") {
  graph::StepGraph g;
  g.info.world_size = 8;
  g.info.shard_group = 8;
  g.add_op(collective(graph::OpKind::all_reduce, 1e9));
  const auto r = run(g, 1);
  // NCCL's ring, Simple: 8.4 us + 14 NVLink steps of 3.4 us (collective_test.cpp).
  const double expected = 8.4e-6 + 14 * 3.4e-6 + 2 * 7.0 / 8.0 * 1e9 / 360e9;
  CHECK(r.timeline.at(0, 0).end == doctest::Approx(expected).epsilon(1e-6).scale(0));
}

TEST_CASE("calibrated compute: GEMM curve, memory bandwidth and launch cost add up") {
  graph::Work w;
  w.gemms = {graph::Gemm{4096, 4096, 4096}, graph::Gemm{64, 64, 64}};
  w.memory_bytes = 1e9;
  w.launches = 3;
  graph::StepGraph g = one_forward(w);
  const auto r = run(g, 1);
  // (2 x 4096^3 + 4e9) / 500 TFLOPS + (2 x 64^3 + 4e9) / 500 TFLOPS + 1e9 / 2 TB/s + 3 x 5 us
  const double big = 2.0 * 4096 * 4096 * 4096;
  const double small = 2.0 * 64 * 64 * 64;
  const double expected = (big + 4e9) / 500e12 + (small + 4e9) / 500e12 + 1e9 / 2e12 + 15e-6;
  CHECK(r.timeline.at(0, 0).end == doctest::Approx(expected).epsilon(1e-9).scale(0));
  CHECK(expected == doctest::Approx(0.000806).epsilon(0.001).scale(0));  // 0.806 ms by hand
}

TEST_CASE("calibrated float8 GEMMs: tensorwise on the measured float8 curve, rowwise at the topology's rate") {
  graph::Work w;
  w.gemms = {graph::Gemm{4096, 4096, 4096, graph::GemmType::fp8}, graph::Gemm{4096, 4096, 4096, graph::GemmType::fp8_rowwise}};
  graph::StepGraph g = one_forward(w);
  const auto topo = dgx_h100();
  auto cal = calibration();
  cal.gemm_fp8 = config::GemmCalibration{1200e12, 8e9};
  const engine::RooflineModel compute(engine::calibrated_rates(engine::ComputeRates::nominal(topo, true), cal));
  const auto ring = test::collectives(topo, test::collectives_settings("ring", "simple"));
  const engine::CalibratedRing calibrated(ring, cal);
  const auto r = engine::simulate(engine::SimulationInput{g, topo, 1, compute, calibrated});
  // Tensorwise: (2 x 4096^3 + 8 GFLOP) / 1,200 TFLOPS = 121.2 us. Rowwise: the topology's float8
  // peak x its float8 efficiency (1,979 x 0.668 = 1,322.0 TFLOPS), without the bf16 curve's 4 GFLOP
  // and without an exposed output write (calibrated): 104.0 us, x 1.007264 for its tiles (512 of
  // 128 x 256 in 4 waves of 132 SMs, 32/33 full, against the reference block's 0.976741;
  // tests/unit/engine/gemm_tiles_test.cpp): 104.7 us. The measured curve's GEMM is priced as
  // measured, without. Its bytes (16 + 16 MiB in, 32 MiB out at 2 TB/s, 33.6 us) do not bind.
  const double big = 2.0 * 4096 * 4096 * 4096;
  const double expected = (big + 8e9) / 1200e12 + big * (0.976741 * 33 / 32) / (1979e12 * 0.668);
  CHECK(r.timeline.at(0, 0).end == doctest::Approx(expected).epsilon(1e-6).scale(0));
  CHECK(expected == doctest::Approx(225.9e-6).epsilon(0.001).scale(0));
}

TEST_CASE("float8 GEMMs with precise accumulation: their own measured curve, else the fast one at the topology's ratio") {
  graph::Work w;
  // torchao's gradient GEMMs: tensorwise and rowwise alike run cuBLAS's tensorwise kernel there.
  w.gemms = {graph::Gemm{4096, 4096, 4096, graph::GemmType::fp8, true}, graph::Gemm{4096, 4096, 4096, graph::GemmType::fp8_rowwise, true}};
  graph::Op op;
  op.work = w;
  auto topo = dgx_h100();
  topo.gpu.efficiency.matmul_fp8 = 0.64;
  topo.gpu.efficiency.matmul_fp8_precise = 0.56;
  const double big = 2.0 * 4096 * 4096 * 4096;
  auto cal = calibration();
  cal.gemm_fp8 = config::GemmCalibration{1200e12, 8e9};
  // Only the fast curve measured: precise at 1,200 x 0.56 / 0.64 = 1,050 TFLOPS, the same size
  // term: 2 x (2 x 4096^3 + 8 GFLOP) / 1,050 TFLOPS = 277.0 us.
  const engine::RooflineModel fast_only(engine::calibrated_rates(engine::ComputeRates::nominal(topo, true), cal));
  CHECK(fast_only.duration(op) == doctest::Approx(2 * (big + 8e9) / 1050e12).epsilon(1e-9).scale(0));
  CHECK(fast_only.duration(op) == doctest::Approx(277.0e-6).epsilon(0.001).scale(0));
  // Both measured: the precise curve, 2 x (2 x 4096^3 + 10 GFLOP) / 1,000 TFLOPS = 294.9 us.
  cal.gemm_fp8_precise = config::GemmCalibration{1000e12, 10e9};
  const engine::RooflineModel both(engine::calibrated_rates(engine::ComputeRates::nominal(topo, true), cal));
  CHECK(both.duration(op) == doctest::Approx(2 * (big + 10e9) / 1000e12).epsilon(1e-9).scale(0));
  // Nominal: 1,979 x 0.56 = 1,108.2 TFLOPS, with the exposed output write of the topology
  // (gemm_output_exposed 0.45 at 2.8475 TB/s, normalized by K_ref): its FLOPs at the rate
  // / (1 - k0 / K_ref), k0 = 0.45 x 1,108.2e12 x 2 / (2 x 2.8475e12) = 175.1, and x 1.007264 for
  // its tiles (4 waves of 132 SMs 32/33 full against the reference block's 0.976741).
  const engine::RooflineModel nominal(engine::ComputeRates::nominal(topo, true));
  const double rate = 1979e12 * 0.56;
  const double k0 = 0.45 * rate * 2 / (2 * 2.8475e12);
  const double one =
      big * (0.976741 * 33 / 32) / (rate / (1 - k0 / engine::RooflineModel::reference_k())) + 0.45 * 2.0 * 4096 * 4096 / 2.8475e12;
  CHECK(nominal.duration(op) == doctest::Approx(2 * one).epsilon(1e-5).scale(0));
}
