#include "replay/kernel_plan.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <variant>

using namespace shardsim;

namespace {

double flops(const std::vector<replay::GemmKernel>& ks) {
  double f = 0;
  for (const auto& k : ks) f += k.flops();
  return f;
}

}  // namespace

TEST_CASE("attention as GEMMs does the FLOPs the simulator counts") {
  // Causal forward: 4 b s^2 h d / 2 = 4 x 2 x 8192^2 x 32 x 128 / 2 = 1.0995e12 FLOPs.
  graph::AttentionCall fwd{2, 8192, 32, 8, 128, true, false};
  CHECK(fwd.flops() == doctest::Approx(1.0995116e12).scale(0));
  CHECK(flops(replay::attention_kernels(fwd)) == doctest::Approx(fwd.flops()).epsilon(1e-9).scale(0));
  CHECK(replay::attention_kernels(fwd).size() == 16);  // 8 query tiles x (S = QK^T, O = PV)
  graph::AttentionCall bwd = fwd;
  bwd.backward = true;
  CHECK(flops(replay::attention_kernels(bwd)) == doctest::Approx(2.5 * fwd.flops()).epsilon(1e-9).scale(0));
  CHECK(replay::attention_kernels(bwd).size() == 40);
  graph::AttentionCall full{1, 1000, 4, 4, 64, false, false};
  CHECK(flops(replay::attention_kernels(full)) == doctest::Approx(4.0 * 1000 * 1000 * 4 * 64).scale(0));
  // A short causal sequence is one tile: the half-product is then a rounded (1/2 x s) key span.
  graph::AttentionCall tiny{1, 100, 1, 1, 8, true, false};
  CHECK(flops(replay::attention_kernels(tiny)) == doctest::Approx(tiny.flops()).scale(0));
}

TEST_CASE("a ring attention step as GEMMs does the FLOPs the simulator counts") {
  // CP 4, one of its 4 steps, causal: the rank's 8,192 / 4 = 2,048 queries (load-balanced, one
  // tile) against half of the step's 8,192 / 4 = 2,048 keys: 1,024. Forward 4 x 2 x 32 x 128 x
  // 2,048 x 1,024 = 68,719,476,736 FLOPs, the simulator's 4 b s^2 h d / 2 / cp / steps.
  graph::AttentionCall fwd{2, 8192, 32, 8, 128, true, false, 4, 4};
  const auto kernels = replay::attention_kernels(fwd);
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0].m == 2048);
  CHECK(kernels[0].n == 1024);
  CHECK(flops(kernels) == doctest::Approx(68719476736.0).epsilon(1e-12).scale(0));
  CHECK(flops(kernels) == doctest::Approx(fwd.flops()).epsilon(1e-12).scale(0));
  graph::AttentionCall bwd = fwd;
  bwd.backward = true;
  CHECK(replay::attention_kernels(bwd).size() == 5);
  CHECK(flops(replay::attention_kernels(bwd)) == doctest::Approx(2.5 * 68719476736.0).epsilon(1e-12).scale(0));
}

TEST_CASE("sliding-window attention as GEMMs does the FLOPs the simulator counts") {
  // 8,192 causal tokens in 8 query tiles of 1,024 under a 4,096-token window: tiles 0-3 lie
  // before the window's edge and attend to 512, 1,536, 2,560 and 3,584 keys on average, as without
  // a window; tiles 4-7 to 4,096 each. 1,024 x (8,192 + 4 x 4,096) = 25,165,824 key visits, 3,072
  // a query: the simulator's count exactly.
  graph::AttentionCall fwd{1, 8192, 32, 8, 128, true, false};
  fwd.window = 4096;
  const auto kernels = replay::attention_kernels(fwd);
  REQUIRE(kernels.size() == 16);
  CHECK(kernels[2].n == 1536);  // tile 1's S = QK^T: 1,024 queries x 1,536 keys
  CHECK(kernels[14].n == 4096);
  CHECK(flops(kernels) == doctest::Approx(4.0 * 8192 * 32 * 128 * 3072).epsilon(1e-12).scale(0));
  CHECK(flops(kernels) == doctest::Approx(fwd.flops()).epsilon(1e-12).scale(0));
  // A 3,000-token window's edge inside tile 2 (queries 2,048-3,072): its mean of min(x, 3000) is
  // ((3000^2 - 2048^2) / 2 + 3000 x 72) / 1024 = 2,557.47 keys, rounded to whole keys.
  fwd.window = 3000;
  CHECK(replay::attention_kernels(fwd)[4].n == 2557);
  CHECK(flops(replay::attention_kernels(fwd)) == doctest::Approx(fwd.flops()).epsilon(1e-4).scale(0));
}

TEST_CASE("a compute op runs its GEMMs, its attention, one copy, and empty kernels up to its launches") {
  graph::Work w;
  w.gemms = {{512, 512, 512}, {512, 1376, 512}};
  w.attention = {{1, 512, 8, 8, 64, true, false}};  // 2 tiles of 256: 4 GEMMs
  w.memory_bytes = 4e6;
  w.launches = 33;
  const auto ks = replay::compute_kernels(w);
  REQUIRE(ks.size() == 33);
  CHECK(std::get<replay::GemmKernel>(ks[1]).n == 1376);
  CHECK(std::holds_alternative<replay::CopyKernel>(ks[6]));
  CHECK(std::get<replay::CopyKernel>(ks[6]).bytes == 4e6);
  CHECK(std::holds_alternative<replay::EmptyKernel>(ks[7]));
  w.launches = 2;  // fewer launches than kernels: every kernel still runs
  CHECK(replay::compute_kernels(w).size() == 7);
  replay::KernelFootprint f;
  for (const auto& k : ks) f.add(k);
  CHECK(f.gemm_b == 1376 * 512);
  CHECK(f.copy_bytes == 2e6);
}

TEST_CASE("float8 GEMMs of every recipe replay as float8 kernels, bf16 ones as bf16") {
  graph::Work w;
  w.gemms = {graph::Gemm{128, 256, 64, graph::GemmType::fp8}, graph::Gemm{128, 256, 64, graph::GemmType::fp8_rowwise},
             graph::Gemm{128, 256, 64, graph::GemmType::mxfp8}, graph::Gemm{128, 256, 64}};
  const auto ks = replay::compute_kernels(w);
  REQUIRE(ks.size() == 4);
  for (int i = 0; i < 3; ++i)
    CHECK(std::get<replay::GemmKernel>(ks[static_cast<std::size_t>(i)]).precision == validate::GemmPrecision::fp8);
  CHECK(std::get<replay::GemmKernel>(ks[3]).precision == validate::GemmPrecision::bf16);
  CHECK(std::get<replay::GemmKernel>(ks[0]).flops() == 2.0 * 128 * 256 * 64);
}
