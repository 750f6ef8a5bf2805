#include "engine/collectives/rccl_model.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace shardsim::engine::collectives::rccl {
namespace {

constexpr double kUs = 1e-6;

using Row = std::array<double, 3>;  // LL, LL128, Simple
using Sizes = std::array<double, 27>;

std::size_t index(Protocol p) {
  return static_cast<std::size_t>(p);
}

// tuning.cc baseLat, rows Tree and Ring.
constexpr Row kBaseLat{12.0, 12.0, 17.0};

// tuning_model_5, rows Tree, Ring.
constexpr std::array<Row, 2> kXgmiLat{Row{0.9, 0.0, 2.3}, Row{0.8, 0.0, 2.1}};
constexpr std::array<Row, 2> kNetLat{Row{10.5, 0.0, 25.0}, Row{9.5, 0.0, 320.0}};
// bwRatio: [two nodes or fewer, more][Tree, Ring].
constexpr std::array<std::array<Row, 2>, 2> kBwRatio{{
    {Row{0.06, 0.0, 0.11}, Row{0.08, 0.0, 1.0}},
    {Row{0.06, 0.0, 0.59}, Row{0.08, 0.0, 1.0}},
}};
// treeCorrectionFactor and ringCorrectionFactor by protocol, for log2(S / 64) = 0 .. 26.
constexpr std::array<Sizes, 3> kTreeCorrection{{
    {.1, .1, .1, .1, .1, .1, 1., 1., 1., 1., 1., .6, 1., .9, 1., 1., .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1},
    {},
    {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .7, 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., .8},
}};
constexpr std::array<Sizes, 3> kRingCorrection{{
    {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, 1., .2, 1., .4, .4, .1, .2, .2, .1, .1, .1, .1, .1, .1, .1, .1},
    {},
    {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .8, 1., 1., 1.},
}};

std::size_t row(nccl::Algo a) {
  return a == nccl::Algo::tree ? 0 : 1;
}

double size_correction(const std::array<Sizes, 3>& table, Protocol p, double bytes) {
  const int log_size = nccl::log2i(static_cast<long long>(bytes) >> 6);
  return table[index(p)][static_cast<std::size_t>(std::min(log_size, 26))];
}

}  // namespace

std::optional<nccl::Algo> algo_of(std::string_view algorithm) {
  if (algorithm == "ring") return nccl::Algo::ring;
  if (algorithm == "tree") return nccl::Algo::tree;
  return std::nullopt;
}

bool enabled(nccl::Algo a, Protocol p, const GroupShape& shape, bool protocol_forced) {
  if (a == nccl::Algo::tree && p == Protocol::simple && shape.nodes <= 1) return false;
  return protocol_forced || p != Protocol::ll128;
}

double latency(nccl::Algo a, graph::OpKind kind, Protocol p, const GroupShape& shape, const ClusterView& cluster) {
  const double xgmi = kXgmiLat[row(a)][index(p)] * kUs;
  const double net = kNetLat[row(a)][index(p)] * kUs + nccl::network_latency(p, cluster);
  if (a == nccl::Algo::tree) return kBaseLat[index(p)] * kUs + 2 * ((shape.per_node - 1) * xgmi + nccl::log2i(shape.nodes) * net);
  const bool all_reduce = kind == graph::OpKind::all_reduce;
  const int steps = (all_reduce ? 2 : 1) * (shape.ranks - 1);
  const int inter = shape.nodes <= 1 ? 0 : all_reduce ? 2 * shape.nodes : shape.nodes - 1;
  const double intra = std::max(xgmi, nccl::net_overhead(p, shape, cluster));
  return kBaseLat[index(p)] * kUs + (steps - inter) * intra + inter * net;
}

double bandwidth_factor(nccl::Algo a, Protocol p, const GroupShape& shape, double bytes) {
  double f = kBwRatio[shape.nodes <= 2 ? 0 : 1][row(a)][index(p)];
  if (a == nccl::Algo::tree) f *= size_correction(kTreeCorrection, p, bytes);
  if (a == nccl::Algo::ring && shape.nodes > 1) f *= size_correction(kRingCorrection, p, bytes);
  return f;
}

double estimate(nccl::Algo a, graph::OpKind kind, Protocol p, const GroupShape& shape, const ClusterView& cluster, double bytes,
                double full_rate) {
  const double f = bandwidth_factor(a, p, shape, bytes);
  if (f <= 0) return std::numeric_limits<double>::infinity();  // LL128, forced: RCCL has no figures for it
  return latency(a, kind, p, shape, cluster) + full_rate / f;
}

}  // namespace shardsim::engine::collectives::rccl
