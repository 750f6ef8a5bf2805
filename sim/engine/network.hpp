// Turns collective plans into SimGrid flows on the platform (internal to the engine).
//
// Path flows (the default): one flow per path, through one link per class of equivalent link
// directions. Two link directions are equivalent when they have the same bandwidth and the same
// paths cross them the same number of times; max-min sharing then gives every member of a class
// the same constraint, so one link can stand for the class exactly. On a symmetric fabric a
// ring over thousands of GPUs crosses a handful of classes, which keeps SimGrid's solver cheap
// (its cost grows with the links of the live flows, and adding a flow with L links costs L^2);
// a degraded link is its own class and still slows every path through it.
// Edge flows: one flow per hop between the GPUs' hosts (O(n) flows; for cross-checks), each
// inter-node pair with its own route (Platform::add_hop_route).
// ECMP (fabric.routing: ecmp): a path that crosses NICs is split into lanes, the flows (NCCL
// channels x queue pairs) a switch hashes each to a spine of its own (Platform::lanes).
// Symmetric mode: only node 0 is built (with pipeline stages, node s for stage s), and a path is
// folded onto it as its busiest node sees it: the hops leaving the node with the most of them
// (every node of a ring; an inner node of NCCL's trees), their ends mapped to the same local
// GPUs of node 0 (of the node of the stage each end is in: a pipeline send leaves its stage's
// node for the next's). A GPU link, a NIC that several GPUs share and a node's uplink then carry
// what they carry in the full platform.
#pragma once

#include <map>
#include <simgrid/s4u.hpp>
#include <tuple>
#include <vector>

#include "config/scenario.hpp"
#include "engine/collective.hpp"
#include "engine/platform.hpp"

namespace shardsim::engine {

class Network {
 public:
  // `nodes_per_stage`: in symmetric mode, the nodes of one pipeline stage (folded onto one node).
  Network(Platform& platform, config::FlowGranularity flows, bool symmetric, int nodes_per_stage = 1);

  // Before the platform is sealed: collect the paths `plan` will need (plans must be
  // reproducible: the same plan is given to flows() later), then build the routes. Returns, for
  // path flows, each path with bytes as (path index, bytes), which routes() turns into Routes
  // once they are built.
  using PathRefs = std::vector<std::pair<int, double>>;
  PathRefs add_routes(const CollectivePlan& plan);
  void build_routes();
  // After sealing: creates (unstarted) flows for `plan`, each tagged with `tag`.
  [[nodiscard]] std::vector<simgrid::s4u::CommPtr> flows(const CollectivePlan& plan, void* tag) const;

  // Path flows: a plan as the routes its flows take and the bytes of each, which the simulator
  // keeps per distinct collective so that a repeated one (every block's all-gather) skips the
  // plan's O(ranks) paths; then flows from them.
  using Routes = std::vector<std::pair<int, double>>;  // (route id, bytes)
  [[nodiscard]] bool by_path() const { return granularity_ == config::FlowGranularity::path; }
  [[nodiscard]] Routes routes(const CollectivePlan& plan) const;
  [[nodiscard]] Routes routes(const PathRefs& paths) const;
  [[nodiscard]] std::vector<simgrid::s4u::CommPtr> flows(const Routes& routes, void* tag) const;
  [[nodiscard]] int link_classes() const { return classes_; }

  // Path flows, after build_routes(): whether no path outside `paths` (ascending) crosses a link
  // direction that one of them crosses; and how a path crosses its link directions, in order:
  // (bandwidth, paths crossing it, times this path crosses it). Instances of a collective whose
  // paths are isolated and cross alike run alike (engine/scheduler.hpp, folding).
  [[nodiscard]] bool isolated(const std::vector<int>& paths) const;
  [[nodiscard]] std::vector<std::tuple<double, int, int>> crossings(int path) const;

 private:
  using Signature = std::vector<std::tuple<int, int, int, int>>;  // (src, dst, via, lane) of each hop
  [[nodiscard]] std::vector<Hop> folded(const Path& p) const;
  // The flows a path is routed as, with their bytes: itself (folded in symmetric mode), or with
  // ECMP its platform_.lanes() lanes, each with that share of the bytes.
  [[nodiscard]] std::vector<std::pair<std::vector<Hop>, double>> lanes(const Path& p) const;
  [[nodiscard]] static Signature signature(const std::vector<Hop>& hops);

  Platform& platform_;
  config::FlowGranularity granularity_;
  bool symmetric_;
  int nodes_per_stage_;
  std::map<Signature, int> paths_;  // path -> index into hops_ / routes_
  std::vector<std::vector<Hop>> hops_;
  std::vector<int> routes_;  // path index -> route id
  int classes_ = 0;
  std::vector<std::vector<int>> path_resources_;                  // per path: the link directions it crosses
  std::vector<std::vector<std::pair<int, int>>> resource_users_;  // per link direction: (path, times)
  std::vector<double> resource_bandwidth_;
};

}  // namespace shardsim::engine
