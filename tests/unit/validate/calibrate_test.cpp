// Calibration recovers planted parameters: synthetic measurements are generated from known rates,
// latencies and bandwidths with +-1% multiplicative noise, then fitted; every parameter must come
// back within 2%.
#include "validate/calibrate.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "config/calibration.hpp"
#include "core/error.hpp"
#include "test_support.hpp"
#include "validate/least_squares.hpp"

using namespace shardsim;

namespace {

// The planted truth.
constexpr double kLaunch = 4e-6;
constexpr double kMemoryBandwidth = 3.2e12;
constexpr double kGemmRate = 700e12;
constexpr double kGemmHalf = 2e9;
constexpr double kGemmFp8Rate = 1250e12;  // float8 GEMMs: their own curve
constexpr double kGemmFp8Half = 6e9;
constexpr double kGemmFp8PreciseRate = 1100e12;  // float8 with precise accumulation: a third curve
constexpr double kGemmFp8PreciseHalf = 8e9;
constexpr double kAttnFwd = 380e12;
constexpr double kAttnBwd = 290e12;
constexpr double kBase = 8.4e-6;
constexpr double kHop = 1.1e-6;
constexpr double kBusAgRs = 360e9;
constexpr double kBusAr = 340e9;
constexpr double kNicBase = 20e-6;
constexpr double kNicHop = 5e-6;
constexpr double kNicBus = 380e9;

validate::BenchResults synthetic(double noise) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> u(1 - noise, 1 + noise);
  validate::BenchResults b;
  b.backend = "synthetic";
  b.device = "planted";
  for (double bytes = 1 << 20; bytes <= 8.0 * (1 << 30); bytes *= 2) {
    b.memory.push_back({bytes, (kLaunch + bytes / kMemoryBandwidth) * u(rng)});
  }
  for (std::int64_t m : {256, 1024, 4096, 16384}) {
    for (std::int64_t n : {512, 2048, 8192}) {
      for (std::int64_t k : {512, 4096}) {
        validate::GemmSample g{m, n, k, 1, 0};
        g.seconds = (kLaunch + (g.flops() + kGemmHalf) / kGemmRate) * u(rng);
        b.gemms.push_back(g);
        validate::GemmSample f{m, n, k, 1, 0, validate::GemmPrecision::fp8};
        f.seconds = (kLaunch + (f.flops() + kGemmFp8Half) / kGemmFp8Rate) * u(rng);
        b.gemms.push_back(f);
        validate::GemmSample p{m, n, k, 1, 0, validate::GemmPrecision::fp8_precise};
        p.seconds = (kLaunch + (p.flops() + kGemmFp8PreciseHalf) / kGemmFp8PreciseRate) * u(rng);
        b.gemms.push_back(p);
      }
    }
  }
  for (std::int64_t seq : {1024, 4096, 8192}) {
    for (bool backward : {false, true}) {
      validate::AttentionSample a;
      a.call = graph::AttentionCall{2, seq, 32, 8, 128, true, backward};
      a.seconds = (kLaunch + a.call.flops() / (backward ? kAttnBwd : kAttnFwd)) * u(rng);
      b.attention.push_back(a);
    }
  }
  for (auto kind : {graph::OpKind::all_gather, graph::OpKind::reduce_scatter, graph::OpKind::all_reduce}) {
    const bool ar = kind == graph::OpKind::all_reduce;
    for (int n : {2, 4, 8}) {
      for (double bytes = 1 << 10; bytes <= 1.0 * (1 << 30); bytes *= 4) {
        validate::CollectiveSample s{kind, config::LinkClass::nvlink, n, n, bytes, 0};
        const int steps = (ar ? 2 : 1) * (n - 1);
        s.seconds = (kBase + steps * kHop + bytes * s.bus_factor() / (ar ? kBusAr : kBusAgRs)) * u(rng);
        b.collectives.push_back(s);
      }
    }
  }
  // Across 2 and 4 nodes of 8 GPUs: 1 and 3 node-crossing steps, the rest on NVLink.
  for (int nodes : {2, 4}) {
    for (double bytes = 1 << 10; bytes <= 1.0 * (1 << 30); bytes *= 4) {
      validate::CollectiveSample s{graph::OpKind::all_gather, config::LinkClass::nic, 8 * nodes, 8, bytes, 0};
      const int inter = nodes - 1;
      const int intra = 8 * nodes - 1 - inter;
      s.seconds = (kNicBase + inter * kNicHop + intra * kHop + bytes * s.bus_factor() / kNicBus) * u(rng);
      b.collectives.push_back(s);
    }
  }
  return b;
}

}  // namespace

TEST_CASE("weighted least squares solves an exact system") {
  // y = 3 + 2 x at x = 1, 2, 10 -> (3, 2), whatever the weights.
  const std::vector<std::vector<double>> rows{{1, 1}, {1, 2}, {1, 10}};
  const std::vector<double> y{5, 7, 23};
  const auto c = validate::weighted_least_squares(rows, y, validate::relative_weights(y));
  CHECK(c[0] == doctest::Approx(3).scale(0));
  CHECK(c[1] == doctest::Approx(2).scale(0));
}

TEST_CASE("non-negative least squares drops a coefficient that would be negative") {
  // y = 2 x exactly but measured a little low at small x: a free fit gives a negative intercept.
  const std::vector<std::vector<double>> rows{{1, 1}, {1, 2}, {1, 4}};
  const std::vector<double> y{1.9, 4.0, 8.0};
  const auto free_fit = validate::weighted_least_squares(rows, y, std::vector<double>(3, 1.0));
  CHECK(free_fit[0] < 0);
  const auto c = validate::nonnegative_least_squares(rows, y, std::vector<double>(3, 1.0));
  CHECK(c[0] == 0);
  // Least squares through the origin: slope = sum(x y) / sum(x^2) = (1.9 + 8 + 32) / 21.
  CHECK(c[1] == doctest::Approx(41.9 / 21).scale(0));
}

TEST_CASE("calibrate recovers planted parameters from noisy synthetic measurements within 2%") {
  const auto fit = validate::fit_calibration(synthetic(0.01));
  const auto& c = fit.calibration;
  const double tol = 0.02;
  CHECK(*c.kernel_launch == doctest::Approx(kLaunch).epsilon(tol).scale(0));
  CHECK(*c.memory_bandwidth == doctest::Approx(kMemoryBandwidth).epsilon(tol).scale(0));
  REQUIRE(c.gemm);
  CHECK(c.gemm->rate == doctest::Approx(kGemmRate).epsilon(tol).scale(0));
  CHECK(c.gemm->half_rate_flops == doctest::Approx(kGemmHalf).epsilon(tol).scale(0));
  REQUIRE(c.gemm_fp8);
  CHECK(c.gemm_fp8->rate == doctest::Approx(kGemmFp8Rate).epsilon(tol).scale(0));
  CHECK(c.gemm_fp8->half_rate_flops == doctest::Approx(kGemmFp8Half).epsilon(tol).scale(0));
  REQUIRE(c.gemm_fp8_precise);
  CHECK(c.gemm_fp8_precise->rate == doctest::Approx(kGemmFp8PreciseRate).epsilon(tol).scale(0));
  CHECK(c.gemm_fp8_precise->half_rate_flops == doctest::Approx(kGemmFp8PreciseHalf).epsilon(tol).scale(0));
  CHECK(*c.attention_forward_rate == doctest::Approx(kAttnFwd).epsilon(tol).scale(0));
  CHECK(*c.attention_backward_rate == doctest::Approx(kAttnBwd).epsilon(tol).scale(0));
  // One alpha-beta line planted: one piece, from the smallest size measured (1 KiB). Latencies
  // are compared relatively (scale 0: doctest's default scale makes microseconds equal to 0).
  for (int k = 0; k < 3; ++k) {
    const auto& e = c.collectives[0][static_cast<std::size_t>(k)];
    REQUIRE(e);
    CAPTURE(k);
    REQUIRE(e->sizes.size() == 1);
    const auto& p = e->sizes.front();
    CHECK(p.from_bytes == 1024.0);
    CHECK(p.base_latency == doctest::Approx(kBase).epsilon(0.05).scale(0));
    CHECK(p.hop_latency == doctest::Approx(kHop).epsilon(0.05).scale(0));
    CHECK(p.bus_bandwidth == doctest::Approx(k == 2 ? kBusAr : kBusAgRs).epsilon(tol).scale(0));
  }
  const auto& nic = c.collectives[1][0];
  REQUIRE(nic);
  REQUIRE(nic->sizes.size() == 1);
  CHECK(nic->sizes[0].base_latency == doctest::Approx(kNicBase).epsilon(0.05).scale(0));
  CHECK(nic->sizes[0].hop_latency == doctest::Approx(kNicHop).epsilon(0.05).scale(0));
  CHECK(nic->sizes[0].bus_bandwidth == doctest::Approx(kNicBus).epsilon(tol).scale(0));
  // The residuals are the noise: mean about 0.5%, worst about 1%.
  for (const auto& r : fit.residuals) {
    CAPTURE(r.what);
    CHECK(r.mean < 0.01);
    CHECK(r.worst < 0.025);
  }
}

TEST_CASE("without noise the fits are exact") {
  const auto fit = validate::fit_calibration(synthetic(0.0));
  const auto& c = fit.calibration;
  CHECK(c.gemm->half_rate_flops == doctest::Approx(kGemmHalf).epsilon(1e-6).scale(0));
  CHECK(c.collectives[0][2]->sizes.at(0).hop_latency == doctest::Approx(kHop).epsilon(1e-6).scale(0));
  CHECK(c.collectives[1][0]->sizes.at(0).base_latency == doctest::Approx(kNicBase).epsilon(1e-6).scale(0));
}

TEST_CASE("the calibration YAML loads back with the fitted numbers") {
  const auto fit = validate::fit_calibration(synthetic(0.01));
  const std::vector<std::string> sources{"a.json", "b.json"};
  test::TempFile f("fitted.yaml", validate::calibration_yaml(fit, "planted \"H200\"", sources));
  const auto back = config::load_calibration(f.path());
  const auto& c = fit.calibration;
  CHECK(back.name == "planted \"H200\"");
  CHECK(back.gemm->rate == doctest::Approx(c.gemm->rate).epsilon(1e-5).scale(0));
  CHECK(back.gemm->half_rate_flops == doctest::Approx(c.gemm->half_rate_flops).epsilon(1e-5).scale(0));
  REQUIRE(back.gemm_fp8);
  CHECK(back.gemm_fp8->rate == doctest::Approx(c.gemm_fp8->rate).epsilon(1e-5).scale(0));
  CHECK(back.gemm_fp8->half_rate_flops == doctest::Approx(c.gemm_fp8->half_rate_flops).epsilon(1e-5).scale(0));
  REQUIRE(back.gemm_fp8_precise);
  CHECK(back.gemm_fp8_precise->rate == doctest::Approx(c.gemm_fp8_precise->rate).epsilon(1e-5).scale(0));
  CHECK(back.gemm_fp8_precise->half_rate_flops == doctest::Approx(c.gemm_fp8_precise->half_rate_flops).epsilon(1e-5).scale(0));
  CHECK(*back.memory_bandwidth == doctest::Approx(*c.memory_bandwidth).epsilon(1e-5).scale(0));
  CHECK(*back.kernel_launch == doctest::Approx(*c.kernel_launch).epsilon(1e-5).scale(0));
  CHECK(*back.attention_backward_rate == doctest::Approx(*c.attention_backward_rate).epsilon(1e-5).scale(0));
  for (int l = 0; l < 2; ++l) {
    for (int k = 0; k < 3; ++k) {
      const auto& a = c.collectives[static_cast<std::size_t>(l)][static_cast<std::size_t>(k)];
      const auto& b = back.collectives[static_cast<std::size_t>(l)][static_cast<std::size_t>(k)];
      REQUIRE(a.has_value() == b.has_value());
      if (!a) continue;
      REQUIRE(b->sizes.size() == a->sizes.size());
      for (std::size_t p = 0; p < a->sizes.size(); ++p) {
        CHECK(b->sizes[p].from_bytes == doctest::Approx(a->sizes[p].from_bytes).epsilon(1e-5).scale(0));
        CHECK(b->sizes[p].base_latency == doctest::Approx(a->sizes[p].base_latency).epsilon(1e-5).scale(0));
        CHECK(b->sizes[p].hop_latency == doctest::Approx(a->sizes[p].hop_latency).epsilon(1e-5).scale(0));
        CHECK(b->sizes[p].bus_bandwidth == doctest::Approx(a->sizes[p].bus_bandwidth).epsilon(1e-5).scale(0));
      }
    }
  }
}

TEST_CASE("GEMM samples keep their dtype and accumulation through the bench JSON, and files without them are bf16 and fast") {
  validate::BenchResults b;
  b.backend = "nccl";
  b.gemms.push_back({16384, 128, 4096, 1, 60e-6, validate::GemmPrecision::fp8});
  b.gemms.push_back({16384, 128, 4096, 1, 90e-6, validate::GemmPrecision::bf16});
  b.gemms.push_back({16384, 128, 4096, 1, 70e-6, validate::GemmPrecision::fp8_precise});
  auto j = nlohmann::json::parse(validate::to_json(b).dump());  // as a file reads back
  CHECK(j["gemms"][0]["dtype"] == "fp8");
  CHECK(j["gemms"][0]["accumulate"] == "fast");
  CHECK(j["gemms"][1]["dtype"] == "bf16");
  CHECK_FALSE(j["gemms"][1].contains("accumulate"));
  CHECK(j["gemms"][2]["accumulate"] == "precise");
  const auto back = validate::bench_from_json(j, "bench.json");
  REQUIRE(back.gemms.size() == 3);
  CHECK(back.gemms[0].precision == validate::GemmPrecision::fp8);
  CHECK(back.gemms[1].precision == validate::GemmPrecision::bf16);
  CHECK(back.gemms[2].precision == validate::GemmPrecision::fp8_precise);
  j["gemms"][2].erase("accumulate");  // written before precise accumulation was timed: fast
  CHECK(validate::bench_from_json(j, "bench.json").gemms[2].precision == validate::GemmPrecision::fp8);
  j["gemms"][0].erase("dtype");
  j["gemms"][0].erase("accumulate");
  CHECK(validate::bench_from_json(j, "bench.json").gemms[0].precision == validate::GemmPrecision::bf16);
  SUBCASE("an accumulation on a bf16 GEMM, or an unknown one, is an error naming the key") {
    j["gemms"][1]["accumulate"] = "fast";
    CHECK_THROWS_WITH_AS((void)validate::bench_from_json(j, "bench.json"),
                         doctest::Contains("gemms[1].accumulate: applies to float8 GEMMs only"), ConfigError);
    j["gemms"][1].erase("accumulate");
    j["gemms"][2]["accumulate"] = "slow";
    CHECK_THROWS_WITH_AS((void)validate::bench_from_json(j, "bench.json"), doctest::Contains("expected fast or precise; got \"slow\""),
                         ConfigError);
    j["gemms"][2]["accumulate"] = "precise";
  }
  j["gemms"][1]["dtype"] = "fp4";
  try {
    (void)validate::bench_from_json(j, "bench.json");
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("gemms[1].dtype") != std::string::npos);
    CHECK(std::string(e.what()).find("expected bf16 or fp8; got \"fp4\"") != std::string::npos);
  }
}

TEST_CASE("too few samples is a clear error, not a wild fit") {
  validate::BenchResults b;
  b.memory.push_back({1e6, 1e-5});
  b.memory.push_back({2e6, 2e-5});
  try {
    (void)validate::fit_calibration(b);
    FAIL("expected an error");
  } catch (const RuntimeError& e) {
    CHECK(std::string(e.what()) == "calibrate: memory: 2 samples; need at least 3");
  }
}

TEST_CASE("GEMMs of one size (a small model's classifier, as in the MI300X ResNet trace) give a rate, no fixed cost") {
  // Copies fix the launch at kLaunch; three GEMMs of 2 x 1024^3 FLOPs taking 4 us + 10 us, 4 us +
  // 11 us and 4 us + 12 us: one rate through the launch, each weighted by the inverse square of
  // its time beyond the launch (relative error): minimise sum ((F r' - x_i) / x_i)^2 over
  // r' = 1 / rate, so rate = sum (F / x_i)^2 / sum F / x_i.
  validate::BenchResults b;
  for (double bytes = 1 << 20; bytes <= 64.0 * (1 << 20); bytes *= 2) b.memory.push_back({bytes, kLaunch + bytes / kMemoryBandwidth});
  const double flops = 2.0 * 1024 * 1024 * 1024;
  double num = 0;
  double den = 0;
  for (double x : {10e-6, 11e-6, 12e-6}) {
    validate::GemmSample g{1024, 1024, 1024, 1, 0};
    g.seconds = kLaunch + x;
    b.gemms.push_back(g);
    num += flops / x;
    den += flops * flops / (x * x);
  }
  const auto fit = validate::fit_calibration(b);
  REQUIRE(fit.calibration.gemm.has_value());
  CHECK(fit.calibration.gemm->rate == doctest::Approx(den / num).epsilon(1e-6).scale(0));
  CHECK(fit.calibration.gemm->half_rate_flops == 0);
  CHECK(std::ranges::count(fit.notes,
                           std::string("gemm: every sample has one size: fitted as the launch cost plus one rate, no fixed cost")) == 1);
}
