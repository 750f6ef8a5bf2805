// Attention by sequence length (engine/compute_model.hpp): a flash-attention kernel has a fixed
// cost per query tile, spread over the keys each query visits, so it takes (1 + L_half / L) x
// its FLOPs at the long-sequence rate. L_half = 240 keys fits FlashAttention-3 and Triton FA2
// forward on H100 (pytorch/benchmark#2391: 16 heads of 128, batch x sequence = 16K, not causal;
// FA3 430 TFLOPS at 512 keys, 621 at 16K). Worked by hand on the DGX H100 topology.
#include <doctest/doctest.h>

#include "config/calibration.hpp"
#include "config/topology.hpp"
#include "engine/calibrated_compute.hpp"
#include "engine/compute_model.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

config::TopologyConfig dgx_h100() {
  return config::load_topology(test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml", ConfigNode{}, "");
}

// Llama 3 8B's attention: 32 query heads of 128 (8 K/V heads), one sequence, causal.
graph::AttentionCall llama(std::int64_t seq, bool backward = false) {
  return graph::AttentionCall{1, seq, 32, 8, 128, true, backward};
}

}  // namespace

TEST_CASE("attention at two sequence lengths: 2,048 and 8,192 tokens, causal, on an H100") {
  const engine::RooflineModel m(engine::ComputeRates::nominal(dgx_h100(), true));
  // Forward at 0.309 x 989 TFLOPS = 305.60 TFLOPS. 2,048 tokens: 4 x 2048^2 x 32 x 128 / 2 =
  // 3.436e10 FLOPs, 112.43 us at that rate; a causal query visits 1,024 keys on average, so
  // x (1 + 240 / 1024) = 1.234: 138.78 us. 8,192 tokens: 16 x the FLOPs, 1.7990 ms, 4,096 keys,
  // x 1.0586: 1.9044 ms, 13.7 x the short one where the FLOPs alone say 16 x.
  CHECK(m.attention_seconds(llama(2048)) == doctest::Approx(138.78e-6).epsilon(1e-3).scale(0));
  CHECK(m.attention_seconds(llama(8192)) == doctest::Approx(1.9044e-3).epsilon(1e-3).scale(0));
  // Backward: 2.5 x the FLOPs at 0.288 x 989 = 284.83 TFLOPS, the same length factor.
  CHECK(m.attention_seconds(llama(8192, true)) == doctest::Approx(2.5 * 5.4976e11 / 284.83e12 * 1.05859).epsilon(1e-3).scale(0));
  // Not causal: every query visits all 2,048 keys, x (1 + 240 / 2048) on twice the FLOPs.
  auto full = llama(2048);
  full.causal = false;
  CHECK(m.attention_seconds(full) == doctest::Approx(2 * 112.43e-6 * (1 + 240.0 / 2048)).epsilon(1e-3).scale(0));
  // A ring step of context parallelism 4 at 8,192 tokens: 1/16 of the FLOPs (1/4 of the queries,
  // one of 4 K/V chunks), 2,048 keys a step, half of them visited: the 2,048-token factor.
  auto step = llama(8192);
  step.cp = 4;
  step.steps = 4;
  CHECK(m.attention_seconds(step) == doctest::Approx(5.4976e11 / 16 / 305.60e12 * 1.234375).epsilon(1e-3).scale(0));
}

TEST_CASE("attention_half_keys 0 prices every FLOP at one rate, and so does a calibrated attention rate") {
  auto topo = dgx_h100();
  topo.gpu.attention_half_keys = 0;
  const engine::RooflineModel flat(engine::ComputeRates::nominal(topo, true));
  CHECK(flat.attention_seconds(llama(2048)) == doctest::Approx(112.43e-6).epsilon(1e-3).scale(0));
  // An empty call costs nothing (not 0 x (1 + 240 / 0)).
  const engine::RooflineModel curved(engine::ComputeRates::nominal(dgx_h100(), true));
  CHECK(curved.attention_seconds(llama(0)) == 0);
  config::CalibrationConfig cal;
  cal.attention_forward_rate = 300e12;
  const engine::RooflineModel calibrated(engine::calibrated_rates(engine::ComputeRates::nominal(dgx_h100(), true), cal));
  CHECK(calibrated.attention_seconds(llama(2048)) == doctest::Approx(3.436e10 / 300e12).epsilon(1e-3).scale(0));
}

TEST_CASE("attention by kernel: cuDNN's and FlashAttention-3 at the FlashAttention-3 paper's speed-ups over FlashAttention-2") {
  // The DGX H100 topology's fractions (topologies/gpus/h100_sxm.yaml): cuDNN 0.563 / 0.449 and
  // FlashAttention-3 0.613 / 0.488, i.e. the FlashAttention-2 paper's 0.35 / 0.28 of 989 TFLOPS
  // times the FA3 paper's measured ratios on one H100 (figs. 5-6, head dim 128, 16K: forward
  // 595 / 370 and 648 / 370, backward 516 / 322 and 561 / 322); FlashAttention-2 itself 0.309 /
  // 0.288, measured causal on an H200 (288.5 / 269.0 TFLOPS at 8,192 tokens). 8,192 causal
  // tokens: 5.4976e11 FLOPs forward, 2.5 x that backward, the length factor 1 + 240 / 4,096 =
  // 1.05859 for every kernel.
  const auto topo = dgx_h100();
  const engine::RooflineModel cudnn(engine::ComputeRates::nominal(topo, true, config::AttentionKernel::cudnn));
  const engine::RooflineModel fa3(engine::ComputeRates::nominal(topo, true, config::AttentionKernel::flash3));
  const engine::RooflineModel fa2(engine::ComputeRates::nominal(topo, true, config::AttentionKernel::flash));
  CHECK(cudnn.attention_seconds(llama(8192)) == doctest::Approx(5.4976e11 / (0.563 * 989e12) * 1.05859).epsilon(1e-3).scale(0));
  CHECK(cudnn.attention_seconds(llama(8192, true)) == doctest::Approx(2.5 * 5.4976e11 / (0.449 * 989e12) * 1.05859).epsilon(1e-3).scale(0));
  CHECK(fa3.attention_seconds(llama(8192)) == doctest::Approx(5.4976e11 / (0.613 * 989e12) * 1.05859).epsilon(1e-3).scale(0));
  CHECK(fa3.attention_seconds(llama(8192, true)) == doctest::Approx(2.5 * 5.4976e11 / (0.488 * 989e12) * 1.05859).epsilon(1e-3).scale(0));
  // The paper's ratios over its FA2 (0.35 / 0.28), to the rounding of the fractions: cuDNN
  // forward 1.608 x, FlashAttention-3 backward 1.742 x.
  const double paper_fa2_forward = 5.4976e11 / (0.35 * 989e12) * 1.05859;
  const double paper_fa2_backward = 2.5 * 5.4976e11 / (0.28 * 989e12) * 1.05859;
  CHECK(paper_fa2_forward / cudnn.attention_seconds(llama(8192)) == doctest::Approx(595.0 / 370).epsilon(2e-3).scale(0));
  CHECK(paper_fa2_backward / fa3.attention_seconds(llama(8192, true)) == doctest::Approx(561.0 / 322).epsilon(2e-3).scale(0));
  // FlashAttention-2 at the H200 measurement of this very call, to the rounding of the fractions.
  CHECK(5.4976e11 / fa2.attention_seconds(llama(8192)) == doctest::Approx(288.5e12).epsilon(2e-3).scale(0));
  CHECK(2.5 * 5.4976e11 / fa2.attention_seconds(llama(8192, true)) == doctest::Approx(269.0e12).epsilon(2e-3).scale(0));
  // GEMMs are the same whichever kernel runs attention.
  CHECK(cudnn.rates().gemm == fa2.rates().gemm);
}

TEST_CASE("sliding-window attention: Mistral's 4,096-token window over 8,192 causal tokens") {
  // By hand: query i (1-based) sees min(i, 4096) keys, in the continuous count 4096 x 8192 -
  // 4096^2 / 2 = 25,165,824 key visits, 3,072 a query where causal attention without a window
  // averages 4,096 (the exact discrete sum, 25,167,872, is 0.008 % more). So 3/4 of the FLOPs:
  // 4 x 8192 x 32 x 128 x 3072 = 4.1232e11 forward, and the length factor 1 + 240 / 3,072 =
  // 1.078125 where 8,192 tokens have 1.05859; at 305.60 TFLOPS 1.4546 ms, 0.7638 x the 1.9044 ms
  // without a window.
  auto windowed = llama(8192);
  windowed.window = 4096;
  CHECK(windowed.keys_per_query() == 3072);
  CHECK(windowed.flops() == doctest::Approx(4.1232e11).epsilon(1e-4).scale(0));
  const engine::RooflineModel m(engine::ComputeRates::nominal(dgx_h100(), true));
  CHECK(m.attention_seconds(windowed) == doctest::Approx(4.1232e11 / 305.60e12 * 1.078125).epsilon(1e-3).scale(0));
  CHECK(m.attention_seconds(windowed) / m.attention_seconds(llama(8192)) ==
        doctest::Approx(0.75 * 1.078125 / 1.05859375).epsilon(1e-9).scale(0));
  // Backward: 2.5 x the forward's FLOPs.
  windowed.backward = true;
  CHECK(windowed.flops() == doctest::Approx(2.5 * 4.1232e11).epsilon(1e-4).scale(0));
  // A window as long as the sequence, or longer, changes nothing.
  auto wide = llama(8192);
  wide.window = 8192;
  CHECK(wide.flops() == llama(8192).flops());
  CHECK(wide.keys_per_query() == 4096);
}
