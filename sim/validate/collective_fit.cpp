#include "validate/collective_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/units.hpp"
#include "validate/least_squares.hpp"

namespace shardsim::validate {
namespace {

int ring_steps(const CollectiveSample& s) {
  return (s.kind == graph::OpKind::all_reduce ? 2 : 1) * (s.ranks - 1);
}
// Ring steps that cross a node boundary (NCCL tuning.cc, as engine/calibrated_ring.cpp).
int inter_steps(const CollectiveSample& s) {
  if (s.nodes() == 1) return 0;
  if (s.ranks_per_node == 1) return ring_steps(s);
  return (s.kind == graph::OpKind::all_reduce ? 2 : 1) * (s.nodes() - 1);
}

std::string size_list(const std::vector<double>& sizes) {
  std::string out;
  for (double s : sizes) out += fmt::format("{}{}", out.empty() ? "" : ", ", format_bytes(Bytes(s)));
  return out;
}

// The samples of one kind and link class, and how each is priced.
struct Curve {
  std::string what;
  config::LinkClass link = config::LinkClass::nvlink;
  std::vector<const CollectiveSample*> samples;          // by size
  std::vector<double> sizes;                             // distinct, ascending
  bool per_step = false;                                 // several ring lengths: base and hop told apart
  std::function<double(const CollectiveSample&)> intra;  // seconds of intra-node steps priced by the NVLink fit

  [[nodiscard]] int hops(const CollectiveSample& s) const { return link == config::LinkClass::nvlink ? ring_steps(s) : inter_steps(s); }
  [[nodiscard]] double predict(const config::CollectivePiece& p, const CollectiveSample& s) const {
    return p.base_latency + hops(s) * p.hop_latency + intra(s) + s.bytes * s.bus_factor() / p.bus_bandwidth;
  }
};

struct RangeFit {
  bool valid = false;
  config::CollectivePiece piece;
  double worst = 0;
};

// Fits the samples whose sizes are sizes[i..j).
RangeFit fit_range(const Curve& c, std::size_t i, std::size_t j) {
  std::vector<const CollectiveSample*> in;
  for (const auto* s : c.samples) {
    if (s->bytes >= c.sizes[i] && s->bytes <= c.sizes[j - 1]) in.push_back(s);
  }
  for (const bool per_step : {c.per_step, false}) {
    const std::size_t unknowns = per_step ? 3 : 2;
    if (in.size() < unknowns + 1) continue;
    std::vector<std::vector<double>> rows;
    std::vector<double> y;
    for (const auto* s : in) {
      const double moved = s->bytes * s->bus_factor();
      rows.push_back(per_step ? std::vector<double>{1.0, static_cast<double>(c.hops(*s)), moved} : std::vector<double>{1.0, moved});
      y.push_back(s->seconds - c.intra(*s));
    }
    std::vector<double> coef;
    try {
      coef = nonnegative_least_squares(rows, y, relative_weights(y));
    } catch (const RuntimeError&) {
      continue;  // e.g. one ring length inside the range: try without a per-step latency
    }
    if (!(coef.back() > 0)) continue;  // times that do not grow with size
    RangeFit f;
    f.valid = true;
    f.piece = config::CollectivePiece{c.sizes[i], coef[0], per_step ? coef[1] : 0.0, 1.0 / coef.back()};
    for (const auto* s : in) f.worst = std::max(f.worst, std::fabs(c.predict(f.piece, *s) - s->seconds) / s->seconds);
    return f;
  }
  return {};
}

struct Cut {
  std::vector<std::size_t> bounds;  // 0 = b0 < b1 < ... < bk = m
  double worst = std::numeric_limits<double>::infinity();
};

// The best cut of sizes into `pieces` runs of at least 3, by the worst residual of any range.
Cut best_cut(const std::vector<std::vector<RangeFit>>& ranges, std::size_t m, int pieces) {
  Cut best;
  std::vector<std::size_t> bounds{0};
  std::function<void(int, double)> search = [&](int left, double worst) {
    const std::size_t from = bounds.back();
    if (left == 1) {
      const RangeFit& r = ranges[from][m];
      if (!r.valid || m - from < 3) return;
      const double w = std::max(worst, r.worst);
      if (w < best.worst) {
        best.worst = w;
        best.bounds = bounds;
        best.bounds.push_back(m);
      }
      return;
    }
    for (std::size_t to = from + 3; to + 3 * static_cast<std::size_t>(left - 1) <= m; ++to) {
      const RangeFit& r = ranges[from][to];
      if (!r.valid || r.worst >= best.worst) continue;
      bounds.push_back(to);
      search(left - 1, std::max(worst, r.worst));
      bounds.pop_back();
    }
  };
  search(pieces, 0.0);
  return best;
}

config::CollectiveCalibration fit_curve(const Curve& c, const FitOptions& o, CalibrationFit& fit) {
  const std::size_t m = c.sizes.size();
  if (m < 3) {
    throw RuntimeError(
        fmt::format("calibrate: {}: {} size{} measured ({}); a latency and a bandwidth need at least 3 sizes, to be fitted and "
                    "checked (measure more sizes, or widen --min-bytes / --max-bytes)",
                    c.what, m, m == 1 ? "" : "s", size_list(c.sizes)));
  }
  std::vector<std::vector<RangeFit>> ranges(m + 1, std::vector<RangeFit>(m + 1));
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = i + 3; j <= m; ++j) ranges[i][j] = fit_range(c, i, j);
  }
  Cut chosen;
  for (int k = 1; k <= o.max_pieces && 3 * static_cast<std::size_t>(k) <= m; ++k) {
    const Cut cut = best_cut(ranges, m, k);
    if (cut.worst < chosen.worst - 1e-12) chosen = cut;
    if (chosen.worst <= o.tolerance) break;
  }
  if (chosen.bounds.empty()) {
    throw RuntimeError(
        fmt::format("calibrate: {}: the times do not grow with size ({}); measure larger sizes", c.what, size_list(c.sizes)));
  }
  config::CollectiveCalibration cc;
  for (std::size_t p = 0; p + 1 < chosen.bounds.size(); ++p) {
    config::CollectivePiece piece = ranges[chosen.bounds[p]][chosen.bounds[p + 1]].piece;
    if (p > 0) piece.from_bytes = std::sqrt(c.sizes[chosen.bounds[p] - 1] * c.sizes[chosen.bounds[p]]);
    cc.sizes.push_back(piece);
  }
  if (c.sizes.front() > 0) {
    fit.notes.push_back(fmt::format("{}: sizes below {} were not measured; the topology's model prices them", c.what,
                                    format_bytes(Bytes(c.sizes.front()))));
  }
  if (chosen.worst > o.tolerance) {
    fit.notes.push_back(fmt::format("{}: no cut into {} pieces or fewer fits every size within {:.0f} %; the best misses by {:.1f} %",
                                    c.what, o.max_pieces, 100 * o.tolerance, 100 * chosen.worst));
  }
  return cc;
}

void residuals_of(const Curve& c, const config::CollectiveCalibration& cc, CalibrationFit& fit) {
  Residuals r{c.what, static_cast<int>(c.samples.size()), 0, 0};
  std::map<std::pair<double, int>, SizeResidual> by_size;
  for (const auto* s : c.samples) {
    const double predicted = c.predict(*cc.at(s->bytes), *s);
    const double signed_error = (predicted - s->seconds) / s->seconds;
    const double e = std::fabs(signed_error);
    r.mean += e / static_cast<double>(c.samples.size());
    r.worst = std::max(r.worst, e);
    SizeResidual& row = by_size[{s->bytes, s->ranks}];
    row.what = fmt::format("{}, {} ranks", c.what, s->ranks);
    row.bytes = s->bytes;
    row.measured.push_back(s->seconds);
    row.predicted = predicted;
    if (e > std::fabs(row.worst)) row.worst = signed_error;
  }
  fit.residuals.push_back(r);
  for (auto& [key, row] : by_size) fit.sizes.push_back(std::move(row));
}

}  // namespace

void fit_collectives(const BenchResults& b, const FitOptions& o, CalibrationFit& fit) {
  auto& cal = fit.calibration;
  // NVLink first: a NIC fit prices its intra-node steps at the NVLink fit's per-step latency.
  for (int l = 0; l < config::kLinkClasses; ++l) {
    const auto link = static_cast<config::LinkClass>(l);
    for (int k = 0; k < config::kCollectiveKinds; ++k) {
      Curve c;
      c.link = link;
      c.what = fmt::format("{} over {}", config::kCollectiveKindNames[static_cast<std::size_t>(k)], config::to_string(link));
      std::size_t outside = 0;
      std::set<int> lengths;
      for (const auto& s : b.collectives) {
        if (s.link != link || graph::collective_index(s.kind) != k) continue;
        if (s.bytes < o.min_bytes || s.bytes > o.max_bytes) {
          ++outside;
          continue;
        }
        c.samples.push_back(&s);
        lengths.insert(c.hops(s));
      }
      if (outside > 0) {
        fit.notes.push_back(
            fmt::format("{}: {} sample{} outside --min-bytes / --max-bytes left out", c.what, outside, outside == 1 ? "" : "s"));
      }
      if (c.samples.empty()) continue;
      std::sort(c.samples.begin(), c.samples.end(), [](const auto* a, const auto* z) { return a->bytes < z->bytes; });
      for (const auto* s : c.samples) {
        if (c.sizes.empty() || c.sizes.back() != s->bytes) c.sizes.push_back(s->bytes);
      }
      c.per_step = lengths.size() > 1;
      const auto& nvlink = cal.collectives[0][static_cast<std::size_t>(k)];
      c.intra = [link, &nvlink](const CollectiveSample& s) {
        if (link != config::LinkClass::nic || !nvlink) return 0.0;
        const auto piece = nvlink->at(s.bytes);
        return piece ? (ring_steps(s) - inter_steps(s)) * piece->hop_latency : 0.0;
      };
      const config::CollectiveCalibration cc = fit_curve(c, o, fit);
      residuals_of(c, cc, fit);
      cal.collectives[static_cast<std::size_t>(l)][static_cast<std::size_t>(k)] = cc;
    }
  }
}

}  // namespace shardsim::validate
