// NCCL's NVLS and NVLS_TREE: NVLink SHARP, where the NVSwitch reduces and multicasts
// (NVSwitch 3 and later, topology key node.nvls; src/device/all_reduce.h, tuning.cc).
//
// All-reduce within a node: rank j owns 1/P of S; it pulls its slice reduced by the switch
// (multimem.ld_reduce: every GPU sends its copy of every slice, S in all, and receives S/P),
// then stores the result to the multicast address (sends S/P, the switch sends every GPU S).
// Each GPU port moves (P+1)/P of S each way, where the ring moves 2(P-1)/P. All-gather and
// reduce-scatter are the second and the first half: S the heavy way, S/P the light way; the
// intra pattern loads both ways alike, so the light way is counted at S (it matters only when
// other traffic shares that direction). NVLink carries NVLS at nvlsEfficiency (0.85 Hopper) of
// the rate the ring achieves.
//
// Across nodes NCCL runs NVLS only for all-reduce, as NVLS_TREE: NVLS reduce-scatter in each
// node, a double binary tree across nodes on each GPU's 1/P slice over its own NIC, NVLS
// all-gather; NVLS all-gather and reduce-scatter across nodes need CollNet (IB SHARP), which
// shardsim does not model. The NVLink port load is as within a node; the NICs carry the tree's
// S/2 per edge split over the P rails, as for the tree.
#include <fmt/format.h>

#include "engine/collectives/builtin.hpp"
#include "engine/collectives/nccl_model.hpp"

namespace shardsim::engine::collectives {
namespace {

class Nvls final : public Algorithm {
 public:
  std::string_view name() const override { return "nvls"; }
  std::string_view description() const override {
    return "NVLink SHARP (node.nvls): ~S per GPU port; across nodes all-reduce only, as NCCL's NVLS_TREE";
  }
  bool in_nccl() const override { return true; }
  std::string unsupported(graph::OpKind kind, const GroupShape& s, const ClusterView& c) const override {
    if (!c.nvls) return "the topology has no NVLink SHARP (node.nvls: false)";
    if (!s.uniform || s.per_node < 2) return "NVLS needs two or more of the group's ranks on each node's NVSwitch";
    if (s.nodes > 1 && kind != graph::OpKind::all_reduce) {
      return fmt::format("across nodes NCCL runs NVLS for all-reduce only (its {} needs CollNet, IB SHARP)", graph::to_string(kind));
    }
    return {};
  }
  bool has(Protocol p) const override { return p == Protocol::simple; }

  Traffic traffic(graph::OpKind kind, const GroupShape& s, double bytes) const override {
    Traffic t;
    if (s.ranks <= 1) return t;
    const int p = s.per_node;
    if (kind != graph::OpKind::all_reduce) {
      t.intra = bytes;
      return t;
    }
    t.intra = (p + 1.0) / p * bytes;
    if (s.nodes >= 2) t.rail_tree = bytes / 2 / p;
    return t;
  }

  // NVLS: the NVLink step alone (25 us); NVLS_TREE: that plus 2 log2(nodes) network steps.
  double latency(graph::OpKind, const GroupShape& s, Protocol p, const ClusterView& c) const override {
    if (s.nodes == 1) return nccl::nvlink_step_latency(nccl::Algo::nvls, p);
    return nccl::base_latency(nccl::Algo::nvls_tree, p) + nccl::nvlink_step_latency(nccl::Algo::nvls_tree, p) +
           2 * nccl::log2i(s.nodes) * nccl::net_step_latency(nccl::Algo::nvls_tree, p, s, c);
  }

  Efficiency efficiency(graph::OpKind, const GroupShape&, Protocol, const ClusterView& c, double) const override {
    return Efficiency{nccl::nvls_efficiency(c.arch), 1.0};
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_nvls() {
  return std::make_unique<Nvls>();
}

}  // namespace shardsim::engine::collectives
