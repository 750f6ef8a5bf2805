// The SimGrid platform of a cluster: one host per GPU, each GPU's NVLink port and NIC as
// split-duplex links, and the fabric between nodes. Internal to the engine (includes SimGrid).
//
//        node 0                          node 1
//   gpu0 ─nvlink0─┐                 ┌─nvlink8─ gpu8
//   gpu1 ─nvlink1─┤ NVSwitch        ├─nvlink9─ gpu9        intra-node: nvlink_a UP, nvlink_b DOWN
//    ...          ┘                 └   ...
// or, with node.nvlink_mesh (no NVSwitch), a link per pair of a node's GPUs with 1/(gpus - 1) of
// a GPU's NVLink bandwidth: intra-node a -> b crosses link {a, b}, UP when a < b.
//   gpu0 ─nic0──┐                      ┌──nic8── gpu8
//   gpu1 ─nic1──┼─[uplink0]─ fabric ─[uplink1]─┼──nic9── gpu9   inter-node: nic_a UP, [uplinks], nic_b DOWN
//    ...        ┘                      └   ...
// Uplinks belong to leaf switches of fabric.nodes_per_leaf nodes: traffic between two nodes of
// one leaf stays below it; traffic between leaves crosses both leaves' uplinks, which every node
// of the leaf (of any job, cluster.jobs) shares.
// With node.nics below node.gpus, consecutive GPUs share a NIC link (gpu0, gpu1 ─ nic0 with 4
// NICs for 8 GPUs), so their traffic across nodes shares its bandwidth.
// One flat star zone holds every GPU (its star route is its NIC, plus its leaf's uplink when the
// fabric is oversubscribed); intra-node pairs get bypass routes through NVLink, and so do
// inter-node pairs that edge flows use (add_hop_route), so that a pair within a leaf skips the uplinks. Routes are
// O(N) + O(N x gpus per node), which scales to tens of thousands of GPUs. A collective's path
// (collective.hpp) gets a pair of link-less endpoint hosts whose route crosses every link of the
// path's hops, so that one flow can stand for the whole ring.
#pragma once

#include <functional>
#include <set>
#include <simgrid/s4u.hpp>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/scenario.hpp"
#include "config/topology.hpp"
#include "core/registry.hpp"
#include "engine/collective.hpp"

namespace shardsim::engine {

// How nodes are connected: which extra links a node's inter-node traffic crosses.
struct FabricInfo {
  std::string_view name;
  std::string_view description;
  // Links every flow between leaf switch `leaf` (with room for `nodes` nodes) and another leaf crosses
  // besides the GPUs' NICs (may be empty).
  std::function<std::vector<simgrid::s4u::Link*>(simgrid::s4u::NetZone& zone, const config::TopologyConfig& topo, int leaf, int nodes)>
      uplinks;
};

class FabricRegistry : public Registry<FabricInfo> {
 public:
  FabricRegistry() : Registry("fabric kind") {}
  // Throws ConfigError at the topology's fabric.kind with the valid names if unknown.
  [[nodiscard]] const FabricInfo& get(const config::Choice& kind) const { return Registry::get(kind.name, kind.where, kind.path); }
};

void register_builtin_fabrics(FabricRegistry& registry);

class Platform {
 public:
  // Builds hosts and links into the running SimGrid engine (create the Engine first). Add path
  // routes, then seal() before simulating. `folded`: node 0 stands for every node (symmetric
  // mode): its hops through the NIC stand for traffic leaving it, which crosses an uplink
  // carrying the node's share of its leaf's.
  // `gpu_routes`: routes between GPU hosts, which only flows per hop (FlowGranularity::edge) use;
  // flows per path cross their own endpoint hosts' routes, so without them only the links are built.
  Platform(const config::TopologyConfig& topo, int nodes, const FabricRegistry& fabrics, bool folded = false, bool gpu_routes = true);

  // A route through every link of the hops (a link crossed k times counts k times); returns its id.
  int add_path_route(const std::vector<Hop>& hops);
  // A route between the GPUs of an inter-node hop through its links (edge flows); once per pair.
  void add_hop_route(const Hop& hop);
  // The link directions a route through the hops crosses, as (link, direction) pairs.
  [[nodiscard]] std::vector<simgrid::s4u::LinkInRoute> links_of(const std::vector<Hop>& hops) const;
  // A link standing for a class of equivalent link directions (see network.hpp).
  simgrid::s4u::Link* add_class_link(double bandwidth);
  // A route through the given (shared) links, with a pair of endpoint hosts; returns its id.
  int add_link_route(const std::vector<simgrid::s4u::Link*>& links);
  // A degraded link keeps `factor` of its bandwidth (stragglers.degraded_links).
  void degrade(int rank, config::LinkKind link, double factor);
  void seal();

  [[nodiscard]] simgrid::s4u::Host* gpu(int rank) const { return gpus_[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] simgrid::s4u::Host* path_src(int route) const { return path_hosts_[static_cast<std::size_t>(2 * route)]; }
  [[nodiscard]] simgrid::s4u::Host* path_dst(int route) const { return path_hosts_[static_cast<std::size_t>(2 * route + 1)]; }
  [[nodiscard]] int gpus_per_node() const { return gpus_per_node_; }
  // Flows an inter-node hop is made of, each hashed to a spine of its own
  // (TopologyConfig::ecmp_lanes; 1 where traffic between leaves is spread evenly).
  [[nodiscard]] int lanes() const { return lanes_; }

 private:
  void append_links(const Hop& hop, std::vector<simgrid::s4u::LinkInRoute>& route) const;

  simgrid::s4u::NetZone* zone_ = nullptr;
  [[nodiscard]] simgrid::s4u::Link* nic_of(int rank) const;

  [[nodiscard]] int leaf_of(int rank) const { return rank / gpus_per_node_ / nodes_per_leaf_; }
  // GPUs gpus/nics apart share a NIC: local GPU l uses NIC l * nics / gpus of its node.
  [[nodiscard]] int nic_index(int rank) const {
    return rank / gpus_per_node_ * nics_per_node_ + rank % gpus_per_node_ * nics_per_node_ / gpus_per_node_;
  }
  [[nodiscard]] bool ecmp() const { return spines_ > 0; }
  // ECMP: the spine a lane of a hop between two NICs hashes to, and a leaf's uplink to it.
  [[nodiscard]] std::size_t spine_of(const Hop& hop) const;
  [[nodiscard]] simgrid::s4u::Link* spine_link(int leaf, std::size_t spine) const;
  // The mesh link between two GPUs of one node.
  [[nodiscard]] simgrid::s4u::Link* pair_link(int a, int b) const;

  int gpus_per_node_ = 1;
  int nics_per_node_ = 1;
  int nodes_per_leaf_ = 1;
  bool folded_ = false;
  std::vector<simgrid::s4u::Host*> gpus_;
  std::vector<simgrid::s4u::Link*> nvlink_;  // per GPU; with a mesh, per node and pair (node * g * g + a * g + b, a < b)
  bool mesh_ = false;
  std::vector<simgrid::s4u::Link*> nic_;                   // node * nics_per_node_ + index
  std::vector<std::vector<simgrid::s4u::Link*>> uplinks_;  // per leaf (shared by every flow leaving it)
  std::uint64_t ecmp_seed_ = 0;
  int spines_ = 0;  // ECMP's spines; 0: traffic between leaves spread evenly
  double spine_bandwidth_ = 0;
  // ECMP: a leaf's uplink to a spine (leaf * spines + spine), created when a route first crosses
  // it, before the platform is sealed: a job's rings cross a few of a large fabric's leaves x
  // spines, and SimGrid's links cost memory whether used or not.
  mutable std::unordered_map<std::uint64_t, simgrid::s4u::Link*> spine_links_;
  int lanes_ = 1;
  std::set<std::pair<int, int>> hop_routes_;  // (src, dst) pairs routed by add_hop_route
  std::vector<simgrid::s4u::Host*> path_hosts_;
  int class_links_ = 0;
};

}  // namespace shardsim::engine
