// NCCL's double binary tree all-reduce (src/graph/trees.cc, src/device/all_reduce.h; tuning.cc).
//
// Two binary trees over the nodes, each carrying half of S, such that a node inside one tree is
// a leaf of the other (patterns.hpp). Each tree reduces its half up to the root and broadcasts
// the result back down, pipelined in chunks: every tree edge carries S/2 up and S/2 down. Inside
// a node the tree is a chain through the node's GPUs (up for the reduction, down for the
// broadcast), so each GPU's NVLink port moves 2(P-1)/P of S as in the ring; across nodes the
// channels spread the trees over all NICs, so each edge's S/2 is split over the P rails.
//
//   tree 0:  n0 <- n2 -> n1, ...        tree 1: mirrored (even node count) or shifted (odd)
//
// Across two nodes a node sends S over its NICs where the ring sends 2(n-1)/n S: the tree's bus
// bandwidth can exceed the NICs' (nccl-tests#196) when NVLink keeps up.
#include "engine/collectives/builtin.hpp"
#include "engine/collectives/nccl_model.hpp"

namespace shardsim::engine::collectives {
namespace {

class Tree final : public Algorithm {
 public:
  std::string_view name() const override { return "tree"; }
  std::string_view description() const override {
    return "NCCL's double binary tree (all-reduce only): chains within nodes, two trees across nodes, S/2 each";
  }
  bool in_nccl() const override { return true; }
  std::string unsupported(graph::OpKind kind, const GroupShape& s, const ClusterView&) const override {
    if (kind != graph::OpKind::all_reduce) return "NCCL's tree runs all-reduce only";
    if (!s.uniform) return "the tree needs the same number of the group's ranks on each node";
    return {};
  }
  bool has(Protocol) const override { return true; }

  Traffic traffic(graph::OpKind, const GroupShape& s, double bytes) const override {
    Traffic t;
    if (s.ranks <= 1) return t;
    const int p = s.per_node;
    if (p >= 2) t.intra = 2.0 * (p - 1) / p * bytes;
    if (s.nodes >= 2) t.rail_tree = bytes / 2 / p;
    return t;
  }

  // base + 2 x ((P-1) intra-node steps + log2(nodes) inter-node steps): up, then down.
  double latency(graph::OpKind, const GroupShape& s, Protocol p, const ClusterView& c) const override {
    return nccl::base_latency(nccl::Algo::tree, p) + 2 * ((s.per_node - 1) * nccl::nvlink_step_latency(nccl::Algo::tree, p) +
                                                          nccl::log2i(s.nodes) * nccl::net_step_latency(nccl::Algo::tree, p, s, c));
  }

  // tuning.cc: the tree all-reduce reaches 0.92 of the bandwidth; LL a further 1/3.8 (capped
  // like the ring's), LL128 7/9 within a node and 120/128 across; times the size correction.
  Efficiency efficiency(graph::OpKind, const GroupShape& s, Protocol p, const ClusterView& c, double bytes) const override {
    double f = 0.92;
    Efficiency e;
    if (p == Protocol::ll) {
      f /= 3.8;
      e.busbw_cap = nccl::ll_max_busbw(s, c);
    } else if (p == Protocol::ll128) {
      f *= s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
    }
    f *= nccl::tree_correction(p, bytes);
    e.nvlink = e.nic = f;
    return e;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_tree() {
  return std::make_unique<Tree>();
}

}  // namespace shardsim::engine::collectives
