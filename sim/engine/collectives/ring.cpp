// NCCL's ring (src/device/all_reduce.h, all_gather.h, reduce_scatter.h; tuning.cc).
//
// Each rank sends (n-1)/n of S to its neighbour (2(n-1)/n for all-reduce: reduce-scatter then
// all-gather around the ring), in n-1 (2(n-1)) steps that advance together. Across nodes NCCL
// runs several rings (channels), each entering and leaving a node through a different GPU's NIC
// (rail-optimised: the same NIC index on every node); together they spread a node's crossing
// traffic over all its NICs. Aggregated over channels: every rank sends 1/P of its share over
// its NIC to the rank at its position on the next node (rail_ring) and the rest over NVLink to
// the next rank of its node (intra). With fewer NICs than GPUs the GPUs sharing a NIC share
// that NIC's bandwidth, as NCCL's channels on it do.
//
//   node 0: r0 -> r1 -> r2 -> r3     intra: (P-1)/P of the share on each hop
//           |     |     |     |
//   node 1: r4 -> r5 -> r6 -> r7     rail_ring: 1/P of the share, r0 -> r4 -> r0, r1 -> r5 -> r1 ...
#include "engine/collectives/builtin.hpp"
#include "engine/collectives/nccl_model.hpp"

namespace shardsim::engine::collectives {
namespace {

class Ring final : public Algorithm {
 public:
  std::string_view name() const override { return "ring"; }
  std::string_view description() const override {
    return "NCCL's ring: (n-1)/n of S per rank (2(n-1)/n for all-reduce), one ring per NIC across nodes";
  }
  bool in_nccl() const override { return true; }
  std::string unsupported(graph::OpKind, const GroupShape&, const ClusterView&) const override { return {}; }
  bool has(Protocol) const override { return true; }

  Traffic traffic(graph::OpKind kind, const GroupShape& s, double bytes) const override {
    Traffic t;
    if (s.ranks <= 1) return t;
    const double factor = kind == graph::OpKind::all_reduce ? 2.0 : 1.0;
    const double share = factor * (s.ranks - 1) / s.ranks * bytes;  // what each rank sends
    if (!s.uniform) {
      t.flat_ring = share;
    } else if (s.nodes == 1) {
      t.intra = share;
    } else {
      t.intra = share * (s.per_node - 1) / s.per_node;
      t.rail_ring = share / s.per_node;
    }
    return t;
  }

  // base + (nsteps - nInter) x intra-node step + nInter x inter-node step.
  double latency(graph::OpKind kind, const GroupShape& s, Protocol p, const ClusterView& c) const override {
    const int factor = kind == graph::OpKind::all_reduce ? 2 : 1;
    const int steps = factor * (s.ranks - 1);
    const int inter = factor * (s.nodes - 1);
    return nccl::base_latency(nccl::Algo::ring, p) + (steps - inter) * nccl::ring_intra_step_latency(p, s, c) +
           inter * nccl::net_step_latency(nccl::Algo::ring, p, s, c);
  }

  Efficiency efficiency(graph::OpKind, const GroupShape& s, Protocol p, const ClusterView& c, double) const override {
    return nccl::ring_protocol(p, s, c);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_ring() {
  return std::make_unique<Ring>();
}

}  // namespace shardsim::engine::collectives
