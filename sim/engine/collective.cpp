#include "engine/collective.hpp"

#include <set>

namespace shardsim::engine {

CollectivePlan RingAlgorithm::plan(graph::OpKind kind, std::span<const int> ranks, double bytes, const ClusterView& cluster) const {
  CollectivePlan p;
  const auto n = static_cast<int>(ranks.size());
  if (n <= 1 || bytes <= 0) return p;
  const bool all_reduce = kind == graph::OpKind::all_reduce;
  const double share = (all_reduce ? 2.0 : 1.0) * (n - 1) / n * bytes;  // what each rank sends

  std::set<int> nodes;
  for (int r : ranks) nodes.insert(cluster.node_of(r));
  const auto node_count = static_cast<int>(nodes.size());
  const int per_node = n / node_count;
  auto at = [&](int i) { return ranks[static_cast<std::size_t>(i)]; };

  if (node_count == 1 || per_node == 1) {
    Path ring;
    ring.bytes = share;
    const Via via = node_count == 1 ? Via::nvlink : Via::nic;
    for (int i = 0; i < n; ++i) ring.hops.push_back(Hop{at(i), at((i + 1) % n), via});
    p.paths.push_back(std::move(ring));
  } else {
    // Ring order is node-major: ranks[node * per_node + local].
    Path nvlink;
    Path nic;
    nvlink.bytes = share * (per_node - 1) / per_node;
    nic.bytes = share / per_node;
    for (int i = 0; i < n; ++i) {
      const int node = i / per_node;
      const int local = i % per_node;
      nvlink.hops.push_back(Hop{at(i), at(node * per_node + (local + 1) % per_node), Via::nvlink});
      nic.hops.push_back(Hop{at(i), at(((node + 1) % node_count) * per_node + local), Via::nic});
    }
    p.paths.push_back(std::move(nvlink));
    p.paths.push_back(std::move(nic));
  }

  const int steps = (all_reduce ? 2 : 1) * (n - 1);
  const int inter = node_count == 1 ? 0 : (per_node == 1 ? steps : (all_reduce ? 2 : 1) * (node_count - 1));
  const double intra_lat = cluster.nvlink.latency.value();
  const double inter_lat = cluster.nic.latency.value() + cluster.switch_latency;
  p.latency = kBaseLatency + (steps - inter) * intra_lat + inter * inter_lat;
  return p;
}

}  // namespace shardsim::engine
