// Error bands (report/error_band.hpp), worked by hand.
#include "report/error_band.hpp"

#include <doctest/doctest.h>

using namespace shardsim;

TEST_CASE("a 90% error band is the t prediction interval of the regime's errors, falling back to wider regimes") {
  std::vector<report::Residual> r;
  for (double e : {0.1, 0.2, 0.3, 0.0, -0.1}) r.push_back({"X", "tokens/s", {"hopper", "none", "compute"}, e});
  // mean 0.1, s = sqrt(0.1 / 4) = 0.15811; t(0.95, 4) = 2.132; half = 2.132 x 0.15811 x sqrt(1.2) = 0.36927.
  auto b = report::error_band(r, {"hopper", "none", "compute"});
  CHECK(b.runs == 5);
  CHECK(b.error_low == doctest::Approx(0.1 - 0.36927).epsilon(1e-4).scale(0));
  CHECK(b.error_high == doctest::Approx(0.1 + 0.36927).epsilon(1e-4).scale(0));
  CHECK(b.basis == "hopper GPUs without float8, compute-bound");
  // A communication-bound Hopper run: fewer than five of its kind, so every Hopper run without float8.
  r.push_back({"C", "tokens/s", {"hopper", "none", "communication"}, 0.4});
  b = report::error_band(r, {"hopper", "none", "communication"});
  CHECK(b.runs == 6);
  CHECK(b.basis == "hopper GPUs without float8");
  // With five of its own it gets their band: errors 0.4, 0.3, 0.5, 0.4, 0.4, mean 0.4.
  for (double e : {0.3, 0.5, 0.4, 0.4}) r.push_back({"C", "tokens/s", {"hopper", "none", "communication"}, e});
  b = report::error_band(r, {"hopper", "none", "communication"});
  CHECK(b.runs == 5);
  CHECK((b.error_low + b.error_high) / 2 == doctest::Approx(0.4).scale(0));
  CHECK(b.basis == "hopper GPUs without float8, communication-bound");
  // Ampere has one run of its own: fewer than five, so the band is that of every run without
  // float8, which says how few of them were on its GPUs.
  CHECK(b.gpu_runs == -1);  // the Hopper band above is Hopper's own
  r.push_back({"Y", "tokens/s", {"ampere", "none", "compute"}, 0.5});
  b = report::error_band(r, {"ampere", "none", "compute"});
  CHECK(b.runs == 11);
  CHECK(b.basis == "runs without float8, only 1 on ampere GPUs");
  CHECK(b.gpu_runs == 1);
  // A GPU no published run used: the same band, other GPUs' errors only.
  b = report::error_band(r, {"blackwell", "none", "compute"});
  CHECK(b.runs == 11);
  CHECK(b.basis == "runs without float8, none on blackwell GPUs");
  CHECK(b.gpu_runs == 0);
  // No float8 runs at all: every run; ten of the eleven on Hopper, so nothing to add.
  b = report::error_band(r, {"hopper", "tensorwise", "compute"});
  CHECK(b.runs == 11);
  CHECK(b.basis == "all runs");
  CHECK(b.gpu_runs == -1);
  CHECK(report::error_band({}, {"hopper", "none", "compute"}).runs == 0);
}

TEST_CASE("a context-parallel run takes the band of the context-parallel runs, and other runs leave them out") {
  std::vector<report::Residual> r;
  for (double e : {0.1, 0.2, 0.3, 0.0, -0.1}) r.push_back({"X", "tokens/s", {"hopper", "none", "compute"}, e});
  // Four context-parallel runs, far off: fewer than five, so a CP run falls back to its regime's
  // band with them in it (nine runs), while a run without CP keeps the five of its own.
  for (double e : {0.3, 0.25, 0.35, 0.3}) r.push_back({"P", "tokens/s", {"hopper", "tensorwise", "compute", "cp"}, e});
  auto b = report::error_band(r, {"hopper", "none", "compute", "cp"});
  CHECK(b.runs == 5);
  CHECK(b.basis == "hopper GPUs without float8, compute-bound");
  b = report::error_band(r, {"hopper", "tensorwise", "compute", "cp"});
  CHECK(b.runs == 9);  // four tensorwise runs: every run then, the CP ones included
  CHECK(b.basis == "all runs");
  b = report::error_band(r, {"hopper", "tensorwise", "compute"});
  CHECK(b.runs == 5);  // without CP: the five others only
  CHECK(b.basis == "all runs");
  // A fifth: the CP band, errors 0.3, 0.25, 0.35, 0.3, 0.3: mean 0.3, s = sqrt(0.005 / 4) = 0.035355,
  // half = 2.132 x 0.035355 x sqrt(1.2) = 0.082573.
  r.push_back({"P", "tokens/s", {"ampere", "none", "communication", "cp"}, 0.3});
  b = report::error_band(r, {"hopper", "none", "compute", "cp"});
  CHECK(b.runs == 5);
  CHECK(b.basis == "runs with context parallelism, only 4 on hopper GPUs");  // the fifth on Ampere
  CHECK(b.gpu_runs == 4);
  CHECK(b.error_low == doctest::Approx(0.3 - 0.082573).epsilon(1e-4).scale(0));
  CHECK(b.error_high == doctest::Approx(0.3 + 0.082573).epsilon(1e-4).scale(0));
  // The CSV keeps the context; a file without the column reads as none.
  const auto back = report::parse_residuals(report::residuals_csv(r));
  CHECK(back.back().regime.context == "cp");
  CHECK(back.front().regime.context == "none");
  CHECK(report::parse_residuals("case,metric,arch,float8,bound,error\nD1,tokens/s,hopper,none,compute,-0.07\n").at(0).regime.context ==
        "none");
}

TEST_CASE(
    "peak memory takes the band of the published runs' errors on the same memory, pipelined runs apart, and throughput ignores them") {
  std::vector<report::Residual> r;
  for (double e : {0.1, 0.2, 0.3, 0.0, -0.1}) r.push_back({"X", "tokens/s", {"hopper", "none", "compute"}, e});
  // Reserved: -0.1, 0.0, 0.1: mean 0, s = 0.1, t(0.95, 2) = 2.920,
  // half = 2.920 x 0.1 x sqrt(4 / 3) = 0.33717.
  r.push_back({"M", "GiB reserved", {"hopper", "none", "compute"}, -0.1});
  r.push_back({"M", "GiB reserved", {"hopper", "tensorwise", "compute", "cp"}, 0.1});
  r.push_back({"M", "GiB reserved", {"ampere", "none", "communication"}, 0.0});
  r.push_back({"A", "GiB allocated", {"hopper", "none", "compute"}, 0.04});
  CHECK(report::measure_of("GiB alloc rank 0") == report::Measure::allocated);
  CHECK(report::measure_of("TFLOPS") == report::Measure::throughput);
  auto b = report::memory_band(r, report::Measure::reserved);
  CHECK(b.runs == 3);
  CHECK(b.error_low == doctest::Approx(-0.33717).epsilon(1e-4).scale(0));
  CHECK(b.error_high == doctest::Approx(0.33717).epsilon(1e-4).scale(0));
  CHECK(b.basis == "reserved memory of runs without a pipeline");
  // A pipelined run with fewer than five pipelined runs to go by: every run's band, the same here.
  CHECK(report::memory_band(r, report::Measure::reserved, true).runs == 3);
  CHECK(report::memory_band(r, report::Measure::reserved, true).basis == "reserved memory");
  // Five pipelined runs at -0.3, -0.2, -0.2, -0.2, -0.1 (mean -0.2, s = sqrt(0.02 / 4) = 0.070711,
  // half = 2.132 x 0.070711 x sqrt(1.2) = 0.165144): a pipelined run takes their band, and the
  // runs without a pipeline keep theirs.
  for (double e : {-0.3, -0.2, -0.2, -0.2, -0.1}) r.push_back({"Q", "GiB reserved", {"hopper", "none", "compute", "none", "pp"}, e});
  b = report::memory_band(r, report::Measure::reserved, true);
  CHECK(b.runs == 5);
  CHECK(b.basis == "reserved memory of pipelined runs");
  CHECK(b.error_low == doctest::Approx(-0.2 - 0.165144).epsilon(1e-4).scale(0));
  CHECK(b.error_high == doctest::Approx(-0.2 + 0.165144).epsilon(1e-4).scale(0));
  CHECK(report::memory_band(r, report::Measure::reserved).runs == 3);
  CHECK(report::parse_residuals(report::residuals_csv(r)).back().regime.pipeline == "pp");
  CHECK(report::memory_band(r, report::Measure::allocated).runs == 0);  // one allocated run: no band
  // The throughput band is the five throughput runs' alone, as in the first case.
  b = report::error_band(r, {"hopper", "none", "compute"});
  CHECK(b.runs == 5);
  CHECK(b.error_high == doctest::Approx(0.1 + 0.36927).epsilon(1e-4).scale(0));
}

TEST_CASE("a run is communication-bound from a tenth of its step in exposed communication") {
  CHECK(report::bound_of(0.099, 1.0) == "compute");
  CHECK(report::bound_of(0.1, 1.0) == "communication");
  CHECK(report::bound_of(0.5, 3.0) == "communication");
  CHECK(report::bound_of(0, 0) == "compute");  // no step: nothing to be bound by
}

TEST_CASE("the residuals file round-trips and the built-in one covers the published runs") {
  const std::vector<report::Residual> r{{"D1", "tokens/s", {"hopper", "none", "compute"}, -0.0391},
                                        {"D4", "TFLOPS", {"ampere", "none", "communication"}, 0.0123}};
  const auto back = report::parse_residuals(report::residuals_csv(r));
  REQUIRE(back.size() == 2);
  CHECK(back[1].id == "D4");
  CHECK(back[1].regime.arch == "ampere");
  CHECK(back[1].regime.bound == "communication");
  CHECK(back[1].error == doctest::Approx(0.0123).scale(0));
  // validation/residuals.csv: every case make validate scores (the validation CTest keeps it current).
  CHECK(report::builtin_residuals().size() >= 20);
}
