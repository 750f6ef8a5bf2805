// Compute rates from a calibration file (shardsim calibrate) in place of the topology's
// peak x efficiency; anything the calibration leaves out keeps its nominal value.
#pragma once

#include "config/calibration.hpp"
#include "engine/compute_model.hpp"

namespace shardsim::engine {

[[nodiscard]] ComputeRates calibrated_rates(ComputeRates nominal, const config::CalibrationConfig& calibration);

}  // namespace shardsim::engine
