// The fleet's GPU-to-GPU variation (topology gpu.variation, engine/variation.hpp): a job computes
// at the pace of its slowest GPU, exp(sigma z) for the largest of n standard normals z.
#include "engine/variation.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "engine/scenario_run.hpp"
#include "fixtures/fixtures.hpp"
#include "test_support.hpp"

using namespace shardsim;

TEST_CASE("the expected slowest of n GPUs: exp(sigma m_n), m_n the expected maximum of n standard normals") {
  // One GPU: the mean of a log-normal, exp(sigma^2 / 2).
  CHECK(engine::expected_slowest(0.1, 1) == doctest::Approx(std::exp(0.005)).epsilon(1e-9).scale(0));
  CHECK(engine::expected_slowest(0, 1024) == 1.0);
  // For a small sigma ln(factor) / sigma is m_n: 1 / sqrt(pi) for two (the mean of |z1 - z2| / 2),
  // and the tabulated 1.42360 for 8 and 2.50759 for 100 (Tippett 1925; Harter 1961).
  const double sigma = 1e-5;
  CHECK(std::log(engine::expected_slowest(sigma, 2)) / sigma == doctest::Approx(1 / std::sqrt(std::numbers::pi)).epsilon(1e-4).scale(0));
  CHECK(std::log(engine::expected_slowest(sigma, 8)) / sigma == doctest::Approx(1.42360).epsilon(1e-4).scale(0));
  CHECK(std::log(engine::expected_slowest(sigma, 100)) / sigma == doctest::Approx(2.50759).epsilon(1e-4).scale(0));
  // The default spread of 1.5 %: 8 GPUs x1.0216, and the slowdown keeps growing with the job.
  CHECK(engine::expected_slowest(0.015, 8) == doctest::Approx(1.0216).epsilon(1e-4).scale(0));
  CHECK(engine::expected_slowest(0.015, 128) > engine::expected_slowest(0.015, 8));
  CHECK(engine::expected_slowest(0.015, 16384) > engine::expected_slowest(0.015, 128));
}

TEST_CASE("a job computes at its slowest GPU's expected pace, in full and symmetric mode alike") {
  struct Run {
    double step = 0;
    double pace = 0;
  };
  auto run = [](std::vector<std::string> sets) {
    return test::in_child([sets] {
      const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
      return Run{engine::simulate(p).timeline.makespan(), engine::fleet_pace(p.scenario)};
    });
  };
  // (at the interference this test was written for: how much of the communication the slower
  // compute hides depends on it; without FSDP's hooks on the CPU, which pace the tiny Llama's
  // blocks where its GPUs are fast enough and are paced by no GPU)
  const Run alike = run({"cluster.overrides={gpu.variation: 0, gpu.comm_interference: 0.1, host.fsdp1_hook_per_tensor: 0us}"});
  const Run varied = run({"cluster.overrides={gpu.variation: 0.05, gpu.comm_interference: 0.1, host.fsdp1_hook_per_tensor: 0us}"});
  const double pace = engine::expected_slowest(0.05, 8);
  CHECK(alike.pace == 1.0);
  CHECK(varied.pace == doctest::Approx(pace).scale(0));
  // The tiny Llama's step is compute with some communication that the slower compute hides
  // better, so it stretches by a little less than the pace.
  CHECK(varied.step > alike.step * (1 + 0.9 * (pace - 1)));
  CHECK(varied.step <= alike.step * pace * (1 + 1e-9));
  // Symmetric mode applies the same pace to its representative rank.
  const Run symmetric = run({"cluster.overrides={gpu.variation: 0.05, gpu.comm_interference: 0.1, host.fsdp1_hook_per_tensor: 0us}",
                             "simulation.mode=symmetric"});
  CHECK(symmetric.step == doctest::Approx(varied.step).epsilon(1e-9).scale(0));
  // Drawing each GPU's own factor (stragglers.gpu_variation) replaces the expectation.
  const Run drawn = run({"cluster.overrides={gpu.variation: 0.05}", "stragglers.gpu_variation=0.05", "simulation.mode=full"});
  CHECK(drawn.pace == 1.0);
}
