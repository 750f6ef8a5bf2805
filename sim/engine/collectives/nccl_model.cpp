#include "engine/collectives/nccl_model.hpp"

#include <algorithm>
#include <array>

namespace shardsim::engine::collectives::nccl {
namespace {

constexpr double kUs = 1e-6;
constexpr double kGBps = 1e9;

using Row = std::array<double, 3>;  // LL, LL128, Simple

std::size_t index(Algo a) {
  return static_cast<std::size_t>(a);
}
std::size_t index(Protocol p) {
  return static_cast<std::size_t>(p);
}

// tuning.cc ncclTunerConstantsDefaults, microseconds, rows Tree, Ring, NVLS, NVLS_TREE.
// NVLS has no base latency: its latency is the NVLink step alone.
constexpr std::array<Row, 4> kBaseLat{Row{6.8, 14.0, 8.4}, Row{6.6, 14.0, 8.4}, Row{0, 0, 0}, Row{0, 0, 0}};
constexpr std::array<Row, 4> kNvlinkLat{Row{0.6, 1.25, 4.0}, Row{0.6, 1.9, 3.4}, Row{0, 0, 25}, Row{0, 0, 25}};
constexpr std::array<Row, 4> kNetLat{Row{5.0, 8.5, 14}, Row{2.7, 4.0, 14.0}, Row{0, 0, 18}, Row{0, 0, 14}};

// llMaxBws, GB/s. Rows: one node by GPU generation (Volta, Ampere, Hopper, Blackwell); columns:
// 1, 2, more nodes. Across nodes NCCL reads row 0 (Intel and other CPUs) or row 1 (AMD).
constexpr std::array<Row, 4> kLlMaxBw{Row{39.0, 39.0, 20.4}, Row{87.7, 22.5, 19.0}, Row{141.0, 45.0, 35.0}, Row{282.0, 90.0, 70.0}};

// The llMaxBws row of one node's GPU generation. RCCL has no LL cap (its tuner rates LL by its
// own bandwidth ratios, rccl_model.hpp): MI300's LL is timed with Hopper's, its contemporary.
std::size_t ll_row(config::GpuArch arch) {
  return arch == config::GpuArch::cdna3 ? static_cast<std::size_t>(config::GpuArch::hopper) : static_cast<std::size_t>(arch);
}

// treeCorrectionFactor by protocol, for log2(bytes / 64) = 0 .. 22.
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};

}  // namespace

int log2i(long long n) {
  int l = 0;
  while (n > 1) {
    n >>= 1;
    ++l;
  }
  return l;
}

double base_latency(Algo a, Protocol p) {
  return kBaseLat[index(a)][index(p)] * kUs;
}

double nvlink_step_latency(Algo a, Protocol p) {
  return kNvlinkLat[index(a)][index(p)] * kUs;
}

double net_overhead(Protocol p, const GroupShape& shape, const ClusterView& cluster) {
  if (shape.nodes <= 1) return 0;
  return (cluster.cpu == config::CpuVendor::amd ? 2.0 : 1.0) * kUs * (p == Protocol::simple ? 3 : 1);
}

double ring_intra_step_latency(Protocol p, const GroupShape& shape, const ClusterView& cluster) {
  return std::max(nvlink_step_latency(Algo::ring, p), net_overhead(p, shape, cluster));
}

double network_latency(Protocol p, const ClusterView& cluster) {
  return (cluster.nic.latency.value() + cluster.switch_latency) * (p == Protocol::simple ? 2 : 1);
}

double net_step_latency(Algo a, Protocol p, const GroupShape& shape, const ClusterView& cluster) {
  const bool one_per_node = shape.ranks == shape.nodes;
  return kNetLat[index(one_per_node ? Algo::tree : a)][index(p)] * kUs + network_latency(p, cluster);
}

double ll_max_busbw(const GroupShape& shape, const ClusterView& cluster) {
  const std::size_t column = shape.nodes <= 2 ? static_cast<std::size_t>(shape.nodes - 1) : 2;
  const std::size_t row = shape.nodes == 1 ? ll_row(cluster.arch) : (cluster.cpu == config::CpuVendor::amd ? std::size_t{1} : 0);
  return kLlMaxBw[row][column] * kGBps;
}

Efficiency ring_protocol(Protocol p, const GroupShape& shape, const ClusterView& cluster) {
  switch (p) {
    case Protocol::ll:
      return Efficiency{0.5, 0.5, ll_max_busbw(shape, cluster)};
    case Protocol::ll128:
      return Efficiency{0.92, 0.92};
    case Protocol::simple:
      break;
  }
  return Efficiency{};
}

double nvls_efficiency(config::GpuArch arch) {
  switch (arch) {
    case config::GpuArch::hopper:
      return 0.85;
    case config::GpuArch::blackwell:
      return 0.74;
    default:
      return 0.0;
  }
}

double tree_correction(Protocol p, double bytes) {
  const auto chunks = static_cast<long long>(bytes) >> 6;
  if (chunks < 1) return kTreeCorrection[index(p)][0];
  const int log_size = log2i(chunks);
  return log_size < 23 ? kTreeCorrection[index(p)][static_cast<std::size_t>(log_size)] : 1.0;
}

}  // namespace shardsim::engine::collectives::nccl
