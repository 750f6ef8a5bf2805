// Hierarchical (two-level) collectives, as Horovod's and several training stacks' hierarchical
// all-reduce: a reduce-scatter among the ranks of each node over NVLink, a ring across nodes
// among the ranks at the same position, each on its 1/P of S over its own NIC, then an
// all-gather within each node. All-gather runs the second half (across nodes, then within),
// reduce-scatter the first. The phases are pipelined in chunks, so they overlap and the busiest
// link sets the pace, as in NCCL's own pipelines. Not an NCCL algorithm: `auto` never picks it.
//
//   node 0: r0 r1 r2 r3   1. reduce-scatter within the node (intra: (P-1)/P S per rank)
//           |  |  |  |    2. ring across nodes on each rail ((N-1)/N S/P per rank, x2 all-reduce)
//   node 1: r4 r5 r6 r7   3. all-gather within the node (intra: (P-1)/P S per rank)
//
// Latency: NCCL's ring constants for the steps taken: 2(P-1) within and 2(N-1) across nodes for
// all-reduce (P-1 and N-1 otherwise), where the flat ring takes 2(n-1) in all.
#include "engine/collectives/builtin.hpp"
#include "engine/collectives/nccl_model.hpp"

namespace shardsim::engine::collectives {
namespace {

class Hierarchical final : public Algorithm {
 public:
  std::string_view name() const override { return "hierarchical"; }
  std::string_view description() const override {
    return "reduce-scatter within nodes, ring across nodes on 1/P of S per NIC, all-gather within nodes (not NCCL: forced only)";
  }
  bool in_nccl() const override { return false; }
  std::string unsupported(graph::OpKind, const GroupShape& s, const ClusterView&) const override {
    if (!s.uniform) return "the hierarchical algorithm needs the same number of the group's ranks on each node";
    return {};
  }
  bool has(Protocol) const override { return true; }

  Traffic traffic(graph::OpKind kind, const GroupShape& s, double bytes) const override {
    Traffic t;
    if (s.ranks <= 1) return t;
    const double factor = kind == graph::OpKind::all_reduce ? 2.0 : 1.0;
    const int p = s.per_node;
    const int n = s.nodes;
    if (p >= 2) t.intra = factor * (p - 1) / p * bytes;
    if (n >= 2) t.rail_ring = factor * (n - 1) / n * bytes / p;
    return t;
  }

  double latency(graph::OpKind kind, const GroupShape& s, Protocol p, const ClusterView& c) const override {
    const int factor = kind == graph::OpKind::all_reduce ? 2 : 1;
    return nccl::base_latency(nccl::Algo::ring, p) + factor * (s.per_node - 1) * nccl::ring_intra_step_latency(p, s, c) +
           factor * (s.nodes - 1) * nccl::net_step_latency(nccl::Algo::ring, p, s, c);
  }

  Efficiency efficiency(graph::OpKind, const GroupShape& s, Protocol p, const ClusterView& c, double) const override {
    return nccl::ring_protocol(p, s, c);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_hierarchical() {
  return std::make_unique<Hierarchical>();
}

}  // namespace shardsim::engine::collectives
