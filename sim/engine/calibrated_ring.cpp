#include "engine/calibrated_ring.hpp"

#include <set>

namespace shardsim::engine {
CalibratedRing::CalibratedRing(const CollectiveAlgorithm& inner, const config::CalibrationConfig& calibration)
    : inner_(inner), calibration_(calibration) {}

CollectivePlan CalibratedRing::plan(graph::OpKind kind, std::span<const int> ranks, double bytes, const ClusterView& cluster) const {
  CollectivePlan p = inner_.plan(kind, ranks, bytes, cluster);
  const auto n = static_cast<int>(ranks.size());
  const int k = graph::collective_index(kind);
  if (n <= 1 || bytes <= 0 || k < 0) return p;

  std::set<int> nodes;
  for (int r : ranks) nodes.insert(cluster.node_of(r));
  const auto node_count = static_cast<int>(nodes.size());
  const int per_node = n / node_count;
  // The calibrated figures of a link class at this size: none when the class is not calibrated,
  // or when a size-aware calibration did not measure sizes this small.
  auto piece = [&](config::LinkClass c) -> std::optional<config::CollectivePiece> {
    const auto& e = calibration_.collectives[static_cast<std::size_t>(c)][static_cast<std::size_t>(k)];
    return e ? e->at(bytes) : std::nullopt;
  };
  const auto own = piece(node_count == 1 ? config::LinkClass::nvlink : config::LinkClass::nic);
  if (!own) return p;

  // Latency: the same step counts as the ring (NCCL's tuning.cc), calibrated per-step costs.
  const bool all_reduce = kind == graph::OpKind::all_reduce;
  const int steps = (all_reduce ? 2 : 1) * (n - 1);
  const int inter = node_count == 1 ? 0 : (per_node == 1 ? steps : (all_reduce ? 2 : 1) * (node_count - 1));
  const auto nvlink = piece(config::LinkClass::nvlink);
  const auto nic = piece(config::LinkClass::nic);
  // Without an NVLink entry the intra-node steps cost the topology's NVLink latency, except under
  // a size-aware NIC calibration: fitted to whole measured curves, its base latency holds them.
  const auto& own_entry = calibration_.collectives[node_count == 1 ? 0 : 1][static_cast<std::size_t>(k)];
  const double intra_hop = nvlink ? nvlink->hop_latency : own_entry->sizes.empty() ? cluster.nvlink.latency.value() : 0.0;
  const double inter_hop = nic ? nic->hop_latency : cluster.nic.latency.value() + cluster.switch_latency;
  p.latency = own->base_latency + (steps - inter) * intra_hop + inter * inter_hop;

  // Bandwidth: rescale each path's bytes so that the engine's link rate gives the calibrated time.
  for (Path& path : p.paths) {
    if (path.hops.empty()) continue;
    const bool over_nic = path.hops.front().via == Via::nic;
    const auto& e = over_nic ? nic : nvlink;
    if (!e) continue;
    const config::LinkSpec& link = over_nic ? cluster.nic : cluster.nvlink;
    const double engine_rate = link.bandwidth.value() * link.efficiency;
    const double target_rate = over_nic ? e->bus_bandwidth / per_node : e->bus_bandwidth;
    path.bytes *= engine_rate / target_rate;
  }
  return p;
}

}  // namespace shardsim::engine
