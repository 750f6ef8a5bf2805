// GPU-to-GPU speed variation of a fleet (topology gpu.variation). GPUs of one SKU do not run at one
// speed: silicon, cooling and power management give each its own, log-normal around the nominal,
// exp(sigma z) with z standard normal, for the whole run. A synchronous job waits at every
// collective for its slowest member, so its compute runs at the pace of the slowest of its n GPUs,
// whose expected factor is
//   E[max_i exp(sigma z_i)] = integral of exp(sigma x) n phi(x) Phi(x)^(n-1) dx
// (phi, Phi the standard normal density and distribution): about exp(sigma m_n), m_n the expected
// maximum of n standard normals (1.42 for 8, 2.59 for 128, 3.25 for 1,024), so it grows like
// sigma sqrt(2 ln n). The engine applies that expectation to every rank's compute (the same on
// all, so ranks stay one cohort and symmetric mode stays exact); stragglers.gpu_variation draws
// each GPU's own factor instead (full mode, one realization).
#pragma once

#include "config/scenario.hpp"

namespace shardsim::engine {

// E[max of n draws of exp(sigma z)], integrated numerically; 1 for sigma 0.
[[nodiscard]] double expected_slowest(double sigma, int n);

// What the fleet's variation slows a job's compute by: expected_slowest over the job's GPUs, or 1
// where the scenario draws each GPU's factor itself (stragglers.gpu_variation).
[[nodiscard]] double fleet_pace(const config::ScenarioConfig& scenario);

}  // namespace shardsim::engine
