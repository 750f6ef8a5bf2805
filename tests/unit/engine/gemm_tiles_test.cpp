// Tile and wave quantization of GEMMs (engine/gemm_tiles.hpp): a GEMM's M x N output in tiles of
// 128 x 256, 256 x 128 or 128 x 128 (the best of the three), run over the GPU's SMs in waves,
// split along K when the tiles are fewer than the SMs. Every figure worked by hand below.
#include "engine/gemm_tiles.hpp"

#include <doctest/doctest.h>

#include "config/topology.hpp"
#include "engine/calibrated_compute.hpp"
#include "engine/compute_model.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

config::TopologyConfig dgx_h100() {
  auto t = config::load_topology(test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml", ConfigNode{}, "");
  t.gpu.gemm_output_exposed = 0;  // the GEMMs' FLOPs alone, so that the fill is all that moves them
  return t;
}

graph::Gemm gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  return graph::Gemm{m, n, k, graph::GemmType::high};
}

}  // namespace

TEST_CASE("a GEMM whose tiles leave the last wave part-empty takes the tile that fills it best") {
  // 29B's w1 under TP 4 at 4,096 tokens on an H100's 132 SMs: 4096 x 5376.
  // 128 x 256: 32 x 21 = 672 tiles, ceil(672 / 132) = 6 waves (5.09), 672 / 792 = 0.8485;
  // 256 x 128: 16 x 42 = 672 tiles, the same; 128 x 128: 32 x 42 = 1,344 tiles, 11 waves (10.18),
  // 1344 / 1452 = 0.92562: the best.
  const auto f = engine::gemm_tile_fill(4096, 5376, 4096, 132);
  CHECK(f.tile_m == 128);
  CHECK(f.tile_n == 128);
  CHECK(f.tiles == 1344);
  CHECK(f.waves == 11);
  CHECK(f.splits == 1);
  CHECK(f.fill == doctest::Approx(1344.0 / 1452).epsilon(1e-9).scale(0));
}

TEST_CASE("a dimension that is not a multiple of the tile's pays for the padded tile") {
  // 4096 x 1000: 128 x 256 tiles pad N to 1,024, 32 x 4 = 128 tiles in one wave of 132 SMs:
  // 4,096,000 / (132 x 32,768) = 0.94697. 128 x 128 makes 256 tiles in 2 waves, the same fill;
  // the larger tile is kept.
  const auto f = engine::gemm_tile_fill(4096, 1000, 4096, 132);
  CHECK(f.tile_n == 256);
  CHECK(f.waves == 1);
  CHECK(f.fill == doctest::Approx(4096000.0 / (132.0 * 32768)).epsilon(1e-9).scale(0));
}

TEST_CASE("a GEMM with fewer tiles than SMs splits K to fill them, each slice 512 deep at least") {
  // 512 x 512 x 8,192: 128 x 256 tiles, 4 x 2 = 8; floor(132 / 8) = 16 slices, 8,192 / 512 = 16
  // allowed: 128 CTAs in one wave, 512 x 512 x 16 / (132 x 32,768) = 0.96970.
  const auto deep = engine::gemm_tile_fill(512, 512, 8192, 132);
  CHECK(deep.tiles == 8);
  CHECK(deep.splits == 16);
  CHECK(deep.fill == doctest::Approx(128.0 / 132).epsilon(1e-9).scale(0));
  // K = 1,024 allows 2 slices: 128 x 256 fills 16 of 132 SMs (0.12121), 128 x 128 makes 16 tiles,
  // 32 CTAs: 512 x 512 x 2 / (132 x 16,384) = 0.24242.
  const auto shallow = engine::gemm_tile_fill(512, 512, 1024, 132);
  CHECK(shallow.tile_n == 128);
  CHECK(shallow.splits == 2);
  CHECK(shallow.fill == doctest::Approx(32.0 / 132).epsilon(1e-9).scale(0));
}

TEST_CASE("the reference block's fill on 132 SMs is its GEMMs' time-weighted mean") {
  // Llama 3 8B's 21 GEMMs at 16,384 tokens: their output tile counts are multiples of 32 that
  // leave ceil(T / 132) waves 32/33 full (e.g. 16384 x 4096 in 128 x 256: 2,048 tiles, 16 waves),
  // except the three 16,384 x 14,336 outputs (w1, w3 forward, w2's grad_input): 128 x 128 makes
  // 14,336 tiles in 109 waves, 14336 / 14388. Their FLOPs in units of 2 x 16,384: 3 x 58,720,256
  // = 176,160,768 of the block's 3 x 218,103,808 = 654,311,424. So 654,311,424 /
  // (478,150,656 x 33 / 32 + 176,160,768 x 14388 / 14336) = 0.976741.
  CHECK(engine::gemm_tile_fill(16384, 14336, 4096, 132).fill == doctest::Approx(14336.0 / 14388).epsilon(1e-9).scale(0));
  CHECK(engine::gemm_tile_fill(16384, 4096, 4096, 132).fill == doctest::Approx(32.0 / 33).epsilon(1e-9).scale(0));
  CHECK(engine::reference_tile_fill(132) == doctest::Approx(0.976741).epsilon(2e-6).scale(0));
}

TEST_CASE("the compute model prices a GEMM's FLOPs over its fill relative to the reference block's") {
  const auto topo = dgx_h100();
  REQUIRE(topo.gpu.sms == 132);
  const engine::RooflineModel m(topo, true);
  // 4096 x 5376 x 4096: 1.80399e11 FLOPs, at 0.68 x 989 = 672.52 TFLOPS 268.24 us; over a fill of
  // 0.92562 against the reference's 0.976741: x 1.055230, 283.06 us.
  const double flops = 2.0 * 4096 * 5376 * 4096;
  const double rate = 672.52e12;
  CHECK(m.gemm_seconds(gemm(4096, 5376, 4096)) == doctest::Approx(flops / rate * 1.055230).epsilon(1e-5).scale(0));
  // A GEMM that fills its waves better than the reference runs faster than the rate: 16384 x 14336.
  const auto wide = gemm(16384, 14336, 4096);
  CHECK(m.gemm_seconds(wide) == doctest::Approx(wide.flops() / rate * 0.976741 / (14336.0 / 14388)).epsilon(1e-5).scale(0));
  // Without the SM count, or with a measured (calibrated) GEMM curve, FLOPs at the rate.
  auto no_sms = topo;
  no_sms.gpu.sms = 0;
  const engine::RooflineModel plain(no_sms, true);
  CHECK(plain.gemm_seconds(gemm(4096, 5376, 4096)) == doctest::Approx(flops / rate).epsilon(1e-9).scale(0));
  config::CalibrationConfig c;
  c.gemm = config::GemmCalibration{600e12, 0};
  const engine::RooflineModel calibrated(engine::calibrated_rates(engine::ComputeRates::nominal(topo, true), c));
  CHECK(calibrated.gemm_seconds(gemm(4096, 5376, 4096)) == doctest::Approx(flops / 600e12).epsilon(1e-9).scale(0));
}

TEST_CASE("a topology's gpu.sms is read, inherited through extends and replaced") {
  CHECK(dgx_h100().gpu.sms == 132);
  const auto h200 = config::load_topology(test::source_dir() / "topologies/h200_sxm_4x_ib400.yaml", ConfigNode{}, "");
  CHECK(h200.gpu.sms == 132);  // extends h200_sxm_8x_ib400.yaml, which extends the H100's
  const auto b200 = config::load_topology(test::source_dir() / "topologies/b200_8x_ib400.yaml", ConfigNode{}, "");
  CHECK(b200.gpu.sms == 148);
  const auto mi300x = config::load_topology(test::source_dir() / "topologies/mi300x_8x_ib400.yaml", ConfigNode{}, "");
  CHECK(mi300x.gpu.sms == 304);
}
