// Collective algorithms turn one collective over a group of ranks into network traffic (which
// SimGrid shares with every other flow on the same links) plus a latency term.
//
// Traffic is a list of paths. A path is a set of hops (rank -> rank over NVLink or over the
// NICs) that carry the same bytes in lockstep, as the edges of one ring do. The engine runs a
// path either as one flow per hop ("edge" flows) or as a single flow through every link of the
// path ("path" flows, the default): for a ring, whose steps advance together, the second is the
// same on a symmetric fabric and costs O(1) flows instead of O(n).
//
// Contract: plan() depends only on its arguments; a hop's bytes are what its links carry.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "config/topology.hpp"
#include "graph/op.hpp"

namespace shardsim::engine {

enum class Via { nvlink, nic };

struct Hop {
  int src = 0;  // rank
  int dst = 0;  // rank
  Via via = Via::nvlink;
};

struct Path {
  std::vector<Hop> hops;
  double bytes = 0;  // carried by every hop
};

struct CollectivePlan {
  std::vector<Path> paths;
  double latency = 0;  // seconds added to the time the data takes
};

// What an algorithm may know of the cluster.
struct ClusterView {
  int gpus_per_node = 8;
  config::LinkSpec nvlink;
  config::LinkSpec nic;
  double switch_latency = 0;
  [[nodiscard]] int node_of(int rank) const { return rank / gpus_per_node; }
};

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // `ranks` in ring order; `bytes` is the collective's total buffer size S.
  [[nodiscard]] virtual CollectivePlan plan(graph::OpKind kind, std::span<const int> ranks, double bytes,
                                            const ClusterView& cluster) const = 0;
};

// NCCL's ring. Inside a node every ring edge carries (n-1)/n of S over NVLink (2(n-1)/n for
// all-reduce). Across nodes NCCL runs one ring per NIC (channels), each leaving the node through
// a different GPU's NIC, so each GPU sends 1/G of its share over its own NIC to the GPU of the
// same local rank on the next node and the rest over NVLink to its neighbour: two paths, one
// over NVLink and one over the NICs. Latency as NCCL's model (src/graph/tuning.cc): a base
// latency plus one per-hop latency per step, intra-node hops at NVLink latency, node-crossing
// hops at NIC plus switch latency.
class RingAlgorithm final : public CollectiveAlgorithm {
 public:
  // NCCL's base latency for the ring Simple protocol (tuning.cc baseLat), used for large messages.
  static constexpr double kBaseLatency = 8.4e-6;

  [[nodiscard]] std::string_view name() const override { return "ring"; }
  [[nodiscard]] CollectivePlan plan(graph::OpKind kind, std::span<const int> ranks, double bytes,
                                    const ClusterView& cluster) const override;
};

}  // namespace shardsim::engine
