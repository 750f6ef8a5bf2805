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

  if (node_count == 1 || per_node == 1) {
    for (int i = 0; i < n; ++i) p.flows.push_back(Flow{ranks[static_cast<std::size_t>(i)], ranks[static_cast<std::size_t>((i + 1) % n)], share});
  } else {
    // Ring order is node-major: ranks[node * per_node + local].
    for (int i = 0; i < n; ++i) {
      const int node = i / per_node;
      const int local = i % per_node;
      const int next_in_node = node * per_node + (local + 1) % per_node;
      const int same_rail_next_node = ((node + 1) % node_count) * per_node + local;
      const int me = ranks[static_cast<std::size_t>(i)];
      p.flows.push_back(Flow{me, ranks[static_cast<std::size_t>(next_in_node)], share * (per_node - 1) / per_node});
      p.flows.push_back(Flow{me, ranks[static_cast<std::size_t>(same_rail_next_node)], share / per_node});
    }
  }

  const int steps = (all_reduce ? 2 : 1) * (n - 1);
  const int inter = node_count == 1 ? 0 : (per_node == 1 ? steps : (all_reduce ? 2 : 1) * (node_count - 1));
  const double intra_lat = cluster.nvlink.latency.value();
  const double inter_lat = cluster.nic.latency.value() + cluster.switch_latency;
  p.latency = kBaseLatency + (steps - inter) * intra_lat + inter * inter_lat;
  return p;
}

}  // namespace shardsim::engine
