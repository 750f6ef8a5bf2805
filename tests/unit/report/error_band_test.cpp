// Error bands (report/error_band.hpp), worked by hand.
#include "report/error_band.hpp"

#include <doctest/doctest.h>

using namespace shardsim;

TEST_CASE("a 90% error band is the t prediction interval of the regime's errors, falling back to wider regimes") {
  std::vector<report::Residual> r;
  for (double e : {0.1, 0.2, 0.3, 0.0, -0.1}) r.push_back({"X", "tokens/s", {"hopper", "none"}, e});
  // mean 0.1, s = sqrt(0.1 / 4) = 0.15811; t(0.95, 4) = 2.132; half = 2.132 x 0.15811 x sqrt(1.2) = 0.36927.
  auto b = report::error_band(r, {"hopper", "none"});
  CHECK(b.runs == 5);
  CHECK(b.error_low == doctest::Approx(0.1 - 0.36927).epsilon(1e-4));
  CHECK(b.error_high == doctest::Approx(0.1 + 0.36927).epsilon(1e-4));
  CHECK(b.basis == "hopper GPUs without float8");
  // Ampere has no runs of its own: fewer than five, so the band is that of every run without float8.
  r.push_back({"Y", "tokens/s", {"ampere", "none"}, 0.5});
  b = report::error_band(r, {"ampere", "none"});
  CHECK(b.runs == 6);
  CHECK(b.basis == "runs without float8");
  // No float8 runs at all: every run.
  b = report::error_band(r, {"hopper", "tensorwise"});
  CHECK(b.runs == 6);
  CHECK(b.basis == "all runs");
  CHECK(report::error_band({}, {"hopper", "none"}).runs == 0);
}

TEST_CASE("the residuals file round-trips and the built-in one covers the published runs") {
  const std::vector<report::Residual> r{{"D1", "tokens/s", {"hopper", "none"}, -0.0391}, {"D4", "TFLOPS", {"ampere", "none"}, 0.0123}};
  const auto back = report::parse_residuals(report::residuals_csv(r));
  REQUIRE(back.size() == 2);
  CHECK(back[1].id == "D4");
  CHECK(back[1].regime.arch == "ampere");
  CHECK(back[1].error == doctest::Approx(0.0123));
  // validation/residuals.csv: every case make validate scores (the validation CTest keeps it current).
  CHECK(report::builtin_residuals().size() >= 20);
}
