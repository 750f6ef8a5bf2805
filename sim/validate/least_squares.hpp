// Weighted linear least squares for the calibration fits: minimise sum_i w_i (x_i . c - y_i)^2.
// With w_i = 1 / y_i^2 this minimises relative error, so that a microsecond latency and a
// second-long transfer count alike. Solved by Householder QR on the weighted, column-scaled
// matrix (no normal equations: the columns differ by 10 orders of magnitude).
//
//   // t = alpha + S / B  ->  columns {1, S}, coefficients {alpha, 1/B}
//   const auto c = weighted_least_squares({{1, 1e3}, {1, 1e9}}, {9e-6, 3e-3}, relative_weights({9e-6, 3e-3}));
#pragma once

#include <span>
#include <vector>

namespace shardsim::validate {

// Returns one coefficient per column. Requires rows >= columns and full column rank; throws
// RuntimeError otherwise (say which fit in the caller).
[[nodiscard]] std::vector<double> weighted_least_squares(const std::vector<std::vector<double>>& rows, std::span<const double> y,
                                                         std::span<const double> weights);

// The same, with every coefficient held >= 0: a column whose coefficient comes out negative is
// dropped (its coefficient set to 0) and the rest refitted, until none is negative.
[[nodiscard]] std::vector<double> nonnegative_least_squares(const std::vector<std::vector<double>>& rows, std::span<const double> y,
                                                            std::span<const double> weights);

// Weights 1 / y_i^2.
[[nodiscard]] std::vector<double> relative_weights(std::span<const double> y);

}  // namespace shardsim::validate
