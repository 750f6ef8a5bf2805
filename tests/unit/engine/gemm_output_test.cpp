// GEMMs by reduction length (engine/compute_model.hpp): a GEMM writes its output tile by tile and
// its main loop hides only part of that write, gpu.gemm_output_exposed (0.45) of the output bytes
// at the memory-bound rate. Normalized so that a Llama 3 8B block's GEMMs cost their FLOPs at the
// topology's rate. Worked by hand on the DGX H100 topology, and checked against XLA's measured
// H100 matmul table (xla/service/gpu/model/matmul_interpolator_data.h, sm_90, bf16).
#include <doctest/doctest.h>

#include <array>

#include "config/topology.hpp"
#include "engine/compute_model.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

config::TopologyConfig dgx_h100() {
  auto t = config::load_topology(test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml", ConfigNode{}, "");
  t.gpu.sms = 0;  // the output write alone: tile and wave quantization has its own tests (gemm_tiles_test.cpp)
  return t;
}

graph::Gemm gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  return graph::Gemm{m, n, k, graph::GemmType::high};
}

}  // namespace

TEST_CASE("the reference reduction length is the FLOP-weighted harmonic mean K of a Llama 3 8B block's GEMMs") {
  // Per linear (out, in): forward K = in, grad_input K = out, grad_weight K = 16,384 tokens, each
  // with 2 x 16384 x out x in FLOPs. Sum of out x in: 4096^2 x 2 + 1024 x 4096 x 2 + 14336 x 4096 x 3
  // = 218,103,808. Sum of out x in / K: forward 159,383,552 / 4096 + 58,720,256 / 14336 = 43,008;
  // grad_input 92,274,688 / 4096 + 8,388,608 / 1024 + 117,440,512 / 14336 = 38,912; grad_weight
  // 218,103,808 / 16384 = 13,312. K_ref = 3 x 218,103,808 / 95,232 = 6,870.71.
  CHECK(engine::RooflineModel::reference_k() == doctest::Approx(6870.71).epsilon(1e-5).scale(0));
}

TEST_CASE("a GEMM's output write costs k0 / K more than its FLOPs, relative to the reference block") {
  const auto topo = dgx_h100();
  const engine::RooflineModel m(engine::ComputeRates::nominal(topo, true));
  // H100: GEMM rate 0.68 x 989 = 672.52 TFLOPS, memory-bound rate 0.85 x 3.35 = 2.8475 TB/s.
  // k0 = 0.45 x 672.52e12 x 2 / (2 x 2.8475e12) = 106.28; the FLOPs proper run at
  // 672.52 / (1 - 106.28 / 6870.71) = 683.09 TFLOPS.
  const double rate = 672.52e12;
  const double flop_rate = 683.09e12;
  const double mem = 2.8475e12;
  // Llama 3 8B's wo under TP 8 at 8,192 tokens: K = 512. 2 x 8192 x 4096 x 512 = 3.436e10 FLOPs,
  // 50.30 us, and 0.45 of its 8192 x 4096 x 2 B = 67.1 MB output at 2.8475 TB/s, 10.61 us:
  // 60.91 us, 19 % over its FLOPs at the rate (51.09 us).
  CHECK(m.gemm_seconds(gemm(8192, 4096, 512)) == doctest::Approx(3.436e10 / flop_rate + 0.45 * 67.109e6 / mem).epsilon(1e-3).scale(0));
  CHECK(m.gemm_seconds(gemm(8192, 4096, 512)) == doctest::Approx(60.91e-6).epsilon(2e-3).scale(0));
  // At K = K_ref a GEMM runs at exactly the rate; at 70B's K = 28,672 a little faster.
  const auto at_ref = gemm(8192, 4096, 6871);
  CHECK(m.gemm_seconds(at_ref) == doctest::Approx(at_ref.flops() / rate).epsilon(1e-4).scale(0));
  const auto long_k = gemm(8192, 8192, 28672);
  CHECK(m.gemm_seconds(long_k) == doctest::Approx(long_k.flops() / flop_rate + 0.45 * 2.0 * 8192 * 8192 / mem).epsilon(1e-3).scale(0));
  CHECK(m.gemm_seconds(long_k) < long_k.flops() / rate);
  // A Llama 3 8B block's GEMMs at 16,384 tokens cost their FLOPs at the rate, all together.
  constexpr std::array<std::array<std::int64_t, 2>, 7> kLinears{
      {{4096, 4096}, {1024, 4096}, {1024, 4096}, {4096, 4096}, {14336, 4096}, {14336, 4096}, {4096, 14336}}};
  double seconds = 0;
  double flops = 0;
  for (const auto& [out, in] : kLinears) {
    for (const auto& g : {gemm(16384, out, in), gemm(16384, in, out), gemm(out, in, 16384)}) {
      seconds += m.gemm_seconds(g);
      flops += g.flops();
    }
  }
  CHECK(seconds == doctest::Approx(flops / rate).epsilon(1e-9).scale(0));
  // Without the term (gemm_output_exposed 0) every GEMM is its FLOPs.
  auto flat = topo;
  flat.gpu.gemm_output_exposed = 0;
  const engine::RooflineModel f(engine::ComputeRates::nominal(flat, true));
  CHECK(f.gemm_seconds(gemm(8192, 4096, 512)) == doctest::Approx(3.436e10 / rate).epsilon(1e-3).scale(0));
}

TEST_CASE("at the rates of the H100 XLA measured, the GEMM model gives XLA's measured table") {
  // XLA's fit of its own table (28 shapes, 4,096-16,384 rows): t = 6.2 us + F / 847 TFLOPS +
  // 0.53 x output bytes / 3.35 TB/s. The roofline with those figures: memory rate 3.35 TB/s,
  // exposed share 0.53, launch 6.2 us, and the rate whose FLOPs proper run at 847 TFLOPS:
  // 847 / (1 + k0 / K_ref) with k0 = 0.53 x 847 / 3.35 = 134.0 (then 847 = rate / (1 - k0' / K_ref),
  // k0' = 0.53 x rate / 3.35).
  // With the H100's 132 SMs too (gpu.sms): every shape below fills its waves 32/33, the 128 x 256
  // tiles of the last four split along K (2,048 x 2,048: 128 tiles, no split; 1,024 x 2,048 and
  // 512 x 4,096: 64 tiles, 2 slices; 512 x 2,048: 128 x 128 tiles, 64 of them, 2 slices), x 1.0073
  // against the reference block's fill (engine/gemm_tiles.hpp): within 4.5 %, the worst 1,024 x
  // 2,048 x 2,048 at -4.1 % (503 TFLOPS against 524; -3.7 % without).
  for (const int sms : {0, 132}) {
    CAPTURE(sms);
    engine::ComputeRates r;
    r.memory = 3.35e12;
    r.gemm_output_exposed = 0.53;
    r.sms = sms;
    const double k0 = 0.53 * 847e12 / 3.35e12;
    r.gemm = 847e12 / (1 + k0 / engine::RooflineModel::reference_k());
    const engine::RooflineModel m(r);
    struct Measured {
      std::int64_t m, n, k;
      double tflops;
    };
    // Batched entries (b x m rows) as one GEMM of b x m rows. The last four are less than a wave
    // of 128 x 256 tiles on the 132 SMs (128, 64, 64 and 32 tiles): cuBLAS splits K across the idle
    // SMs, so they run at the FLOP rate with no wave quantization (one wave with K unsplit would
    // give 604, 309, 248 and 126 TFLOPS; docs/fidelity.md).
    constexpr std::array<Measured, 12> kTable{{{16384, 4096, 4096, 793.1},
                                               {16384, 4096, 512, 619.9},
                                               {16384, 4096, 256, 503.9},
                                               {16384, 2048, 512, 607.5},
                                               {16384, 1024, 1024, 673.8},
                                               {8192, 4096, 2048, 763.0},
                                               {8192, 2048, 256, 394.5},
                                               {4096, 4096, 512, 543.1},
                                               {2048, 2048, 2048, 632.0},
                                               {1024, 2048, 2048, 524.3},
                                               {512, 4096, 1024, 373.3},
                                               {512, 2048, 1024, 232.6}}};
    for (const auto& e : kTable) {
      const auto g = gemm(e.m, e.n, e.k);
      const double predicted = g.flops() / (m.gemm_seconds(g) + 6.2e-6) / 1e12;
      CAPTURE(e.m);
      CAPTURE(e.n);
      CAPTURE(e.k);
      CHECK(predicted == doctest::Approx(e.tflops).epsilon(sms == 0 ? 0.04 : 0.045).scale(0));
    }
  }
}
