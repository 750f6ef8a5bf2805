#include "validate/least_squares.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace shardsim::validate {

std::vector<double> weighted_least_squares(const std::vector<std::vector<double>>& rows, std::span<const double> y,
                                           std::span<const double> weights) {
  const std::size_t m = rows.size();
  const std::size_t n = m == 0 ? 0 : rows.front().size();
  if (m < n || n == 0 || y.size() != m || weights.size() != m) {
    throw RuntimeError(fmt::format("least squares: {} samples for {} unknowns", m, n));
  }
  // A = diag(sqrt(w)) X with unit-norm columns; b = diag(sqrt(w)) y.
  std::vector<std::vector<double>> a(m, std::vector<double>(n));
  std::vector<double> b(m);
  std::vector<double> scale(n, 0.0);
  for (std::size_t i = 0; i < m; ++i) {
    const double s = std::sqrt(weights[i]);
    for (std::size_t j = 0; j < n; ++j) a[i][j] = s * rows[i][j];
    b[i] = s * y[i];
  }
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t i = 0; i < m; ++i) scale[j] += a[i][j] * a[i][j];
    scale[j] = std::sqrt(scale[j]);
    if (scale[j] == 0) throw RuntimeError(fmt::format("least squares: column {} is all zero", j));
    for (std::size_t i = 0; i < m; ++i) a[i][j] /= scale[j];
  }
  // Householder QR, applying each reflection to b as well.
  for (std::size_t k = 0; k < n; ++k) {
    double norm = 0;
    for (std::size_t i = k; i < m; ++i) norm += a[i][k] * a[i][k];
    norm = std::sqrt(norm);
    if (norm < 1e-12) throw RuntimeError("least squares: the samples do not determine every unknown (rank deficient)");
    const double alpha = a[k][k] > 0 ? -norm : norm;
    std::vector<double> v(m, 0.0);
    for (std::size_t i = k; i < m; ++i) v[i] = a[i][k];
    v[k] -= alpha;
    double vv = 0;
    for (std::size_t i = k; i < m; ++i) vv += v[i] * v[i];
    if (vv == 0) continue;
    for (std::size_t j = k; j < n; ++j) {
      double dot = 0;
      for (std::size_t i = k; i < m; ++i) dot += v[i] * a[i][j];
      for (std::size_t i = k; i < m; ++i) a[i][j] -= 2 * dot / vv * v[i];
    }
    double dot = 0;
    for (std::size_t i = k; i < m; ++i) dot += v[i] * b[i];
    for (std::size_t i = k; i < m; ++i) b[i] -= 2 * dot / vv * v[i];
  }
  // Back substitution on R c = Q^T b, then undo the column scaling.
  std::vector<double> c(n, 0.0);
  for (std::size_t kk = n; kk-- > 0;) {
    double s = b[kk];
    for (std::size_t j = kk + 1; j < n; ++j) s -= a[kk][j] * c[j];
    c[kk] = s / a[kk][kk];
  }
  for (std::size_t j = 0; j < n; ++j) c[j] /= scale[j];
  return c;
}

std::vector<double> nonnegative_least_squares(const std::vector<std::vector<double>>& rows, std::span<const double> y,
                                              std::span<const double> weights) {
  const std::size_t n = rows.empty() ? 0 : rows.front().size();
  std::vector<bool> active(n, true);
  while (true) {
    std::vector<std::size_t> cols;
    for (std::size_t j = 0; j < n; ++j) {
      if (active[j]) cols.push_back(j);
    }
    if (cols.empty()) return std::vector<double>(n, 0.0);
    std::vector<std::vector<double>> sub(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (std::size_t j : cols) sub[i].push_back(rows[i][j]);
    }
    const std::vector<double> c = weighted_least_squares(sub, y, weights);
    std::vector<double> out(n, 0.0);
    std::size_t worst = n;
    for (std::size_t q = 0; q < cols.size(); ++q) {
      out[cols[q]] = c[q];
      if (c[q] < 0 && worst == n) worst = cols[q];
    }
    if (worst == n) return out;
    active[worst] = false;
  }
}

std::vector<double> relative_weights(std::span<const double> y) {
  std::vector<double> w;
  w.reserve(y.size());
  for (double v : y) w.push_back(v != 0 ? 1.0 / (v * v) : 1.0);
  return w;
}

}  // namespace shardsim::validate
