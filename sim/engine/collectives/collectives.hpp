// The engine's collective algorithm: for each collective, picks an NCCL algorithm and protocol
// as NCCL's tuner does (ncclTopoGetAlgoTime / getAlgoInfo: time every enabled pair as latency +
// bytes / bandwidth and take the fastest), or runs the ones the scenario forces
// (collectives.algorithm / collectives.protocol), and plans its traffic.
//
// On AMD GPUs RCCL's tuner picks instead, by its own tables (rccl_model.hpp), among the pairs it
// enables; the pair it picks is timed as above.
//
// The time of a pair, as in NCCL, is its latency (algorithm.hpp) plus its transfer time; the
// transfer time here is that of the algorithm's traffic on the cluster's links (patterns.hpp),
// with NCCL's protocol and algorithm factors applied by scaling the bytes: LL sends every byte
// twice (x1/0.5), LL128 x1/0.92, NVLS's NVLink traffic x1/0.85 on Hopper, and so on. Scaling
// bytes rather than link rates keeps the factors in force when SimGrid shares the links with
// other traffic, and makes the estimate and an idle simulation agree. A bus-bandwidth cap (LL's)
// scales the bytes further until the estimate meets it.
//
//   Collectives c(scenario.collectives, cluster_view(topology), std::move(registry));
//   c.check(graph);                                        // forced choices the graph cannot run
//   auto s = c.select(OpKind::all_reduce, ranks, 1 << 30);  // s.algorithm->name(), s.protocol
//
// The ClusterView the engine passes to plan() is ignored: the one given here (built from the
// whole topology by cluster_view()) describes the same cluster with every field filled.
#pragma once

#include <array>
#include <map>
#include <tuple>
#include <vector>

#include "config/scenario.hpp"
#include "engine/collective.hpp"
#include "engine/collectives/algorithm.hpp"
#include "graph/outside_allocator.hpp"
#include "graph/step_graph.hpp"

namespace shardsim::engine::collectives {

struct Selection {
  const Algorithm* algorithm = nullptr;
  Protocol protocol = Protocol::simple;
  double latency = 0;   // seconds
  double transfer = 0;  // seconds, alone on the cluster
  Traffic traffic;      // bytes per hop of each pattern, protocol overheads included
  double tuner = 0;     // seconds: the library's estimate it picks by (time() under NCCL, RCCL's own under RCCL)
  [[nodiscard]] double time() const { return latency + transfer; }
};

class Collectives final : public CollectiveAlgorithm {
 public:
  // Throws ConfigError at the scenario's collectives settings for an unknown algorithm, or a
  // forced protocol the forced algorithm does not have.
  Collectives(const config::CollectivesConfig& settings, const ClusterView& cluster, AlgorithmRegistry registry);

  [[nodiscard]] std::string_view name() const override { return "nccl"; }
  // Throws ConfigError if a forced algorithm cannot run this collective (see check()).
  [[nodiscard]] CollectivePlan plan(graph::OpKind kind, std::span<const int> ranks, double bytes,
                                    const ClusterView& ignored) const override;

  // The (algorithm, protocol) plan() runs for this collective.
  [[nodiscard]] Selection select(graph::OpKind kind, std::span<const int> ranks, double bytes) const;
  // Every pair the tuner weighs, in its order (empty for a group of one rank).
  [[nodiscard]] std::vector<Selection> candidates(graph::OpKind kind, std::span<const int> ranks, double bytes) const;

  // Throws ConfigError at the forcing setting if a forced algorithm cannot run one of the
  // graph's collectives (the tree an all-gather, NVLS without node.nvls, ...).
  void check(const graph::StepGraph& graph) const;

  // Per parallel group with collectives in the graph, the algorithms plan() runs them with (the
  // buffers NCCL connects for them: graph/outside_allocator.hpp).
  [[nodiscard]] std::vector<graph::CommunicatorUse> communicators(const graph::StepGraph& graph) const;

  [[nodiscard]] const AlgorithmRegistry& registry() const { return registry_; }

 private:
  struct Forced {
    const Algorithm* algorithm = nullptr;  // nullptr: auto
    config::Choice setting;
  };
  [[nodiscard]] const Forced& forced(graph::OpKind kind) const;
  [[nodiscard]] std::vector<Selection> weigh(graph::OpKind kind, std::span<const int> ranks, const GroupShape& shape, double bytes) const;
  [[nodiscard]] Selection evaluate(const Algorithm& a, Protocol p, graph::OpKind kind, std::span<const int> ranks, const GroupShape& shape,
                                   double bytes) const;
  // Whether the library's tuner weighs the pair (RCCL: no LL128 unforced, no tree with Simple in a node).
  [[nodiscard]] bool tuner_enables(const Algorithm& a, Protocol p, const GroupShape& shape) const;
  [[nodiscard]] Selection choose(graph::OpKind kind, std::span<const int> ranks, const GroupShape& shape, double bytes) const;

  ClusterView cluster_;
  AlgorithmRegistry registry_;
  std::array<Forced, 3> forced_;  // all_gather, reduce_scatter, all_reduce
  bool protocol_forced_ = false;
  Protocol protocol_ = Protocol::simple;
  config::Choice protocol_setting_;
  // Memo of choose() for uniform groups: the choice depends on the group's shape, not its ranks.
  using Key = std::tuple<int, int, int, int, int, double>;  // kind, ranks, nodes, per node, per NIC, bytes
  mutable std::map<Key, Selection> memo_;
};

}  // namespace shardsim::engine::collectives
