// The collective part of `shardsim calibrate`: per collective kind and link class, the time of a
// collective of S bytes as pieces by size, each  t = base + steps x hop + S f(n) / busbw  (the
// size-aware form of config::CollectiveCalibration).
//
// Why pieces: measured curves are not one alpha-beta line. On 2 x 8 H100 an all-reduce's bus
// bandwidth climbs from 39 GB/s at 8 MiB to 102 GB/s at 64 MiB and settles at 87-90 GB/s from
// 512 MiB (nccl-tests, ../shared/real-data): the best single line misses by -21 % / +21 %. NCCL itself
// switches protocol and algorithm with size, each with its own latency and bandwidth.
//
// The fit: the distinct sizes measured, sorted, are cut into at most `max_pieces` runs of at
// least 3 sizes (2 unknowns and a check); each run is fitted by weighted least squares (weights
// 1/t^2, coefficients >= 0); the fewest pieces whose worst residual is within `tolerance` win,
// else the cut with the smallest worst residual. Neighbouring pieces meet halfway (geometric
// mean) between the last size of one and the first of the next. Sizes below the smallest
// measured are left to the topology's model: an intercept fitted at 128 MiB says nothing of the
// latency of a 1 MiB collective. Fewer than 3 sizes is refused: a line through two points has
// nothing left to check it.
#pragma once

#include "validate/bench_data.hpp"
#include "validate/calibrate.hpp"

namespace shardsim::validate {

// Fills fit.calibration.collectives and the collective residuals. Throws RuntimeError naming
// the collective and link class when the samples cannot determine it.
void fit_collectives(const BenchResults& bench, const FitOptions& options, CalibrationFit& fit);

}  // namespace shardsim::validate
