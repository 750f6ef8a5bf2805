// An NCCL collective algorithm, as NCCL's tuner and shardsim's flow model see it: which
// collectives it runs, the traffic it puts on the links, its latency and the fraction of link
// bandwidth each protocol achieves (NCCL src/graph/tuning.cc, ncclTopoTuneModel). Collectives
// (collectives.hpp) times every eligible (algorithm, protocol) with these and runs the fastest.
//
// Traffic is stated over the standard hop patterns of patterns.hpp (a ring inside each node, a
// ring or NCCL's double binary tree across nodes on each rail, a flat ring): an algorithm says
// how many bytes each hop of each pattern carries. All algorithms share the patterns, so that
// switching algorithm with the message size changes bytes, never routes (collective.hpp).
//
// Contract: every method depends only on its arguments; traffic() is what the links carry with
// an ideal protocol at full link rate, efficiency() what NCCL's model says a protocol achieves.
#pragma once

#include <array>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/registry.hpp"
#include "engine/collective.hpp"
#include "engine/collectives/patterns.hpp"

namespace shardsim::engine::collectives {

// NCCL's protocols: LL (8-byte lines, half of them flags), LL128 (128-byte lines, 8 bytes of
// flag), Simple (large chunks, a fence per chunk). Lower latency for lower bandwidth.
enum class Protocol { ll, ll128, simple };
inline constexpr std::array<Protocol, 3> kProtocols{Protocol::ll, Protocol::ll128, Protocol::simple};
[[nodiscard]] std::string_view to_string(Protocol p);

// What NCCL's model says the algorithm's data achieves, as fractions of the links' rates
// (`nvlink` for intra-node patterns, `nic` for inter-node ones), and a cap on its bus bandwidth
// as nccl-tests reports it (S x (n-1)/n, or x 2(n-1)/n for all-reduce, over the time), bytes/s.
struct Efficiency {
  double nvlink = 1.0;
  double nic = 1.0;
  double busbw_cap = std::numeric_limits<double>::infinity();
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual std::string_view description() const = 0;
  // Whether NCCL's tuner has it, so that `auto` considers it (false: only when forced).
  [[nodiscard]] virtual bool in_nccl() const = 0;
  // Empty when the algorithm runs `kind` over a group of this shape on this cluster; otherwise
  // why it does not (shown to the user who forced it).
  [[nodiscard]] virtual std::string unsupported(graph::OpKind kind, const GroupShape& shape, const ClusterView& cluster) const = 0;
  // Whether NCCL implements the algorithm with this protocol (NVLS: Simple only).
  [[nodiscard]] virtual bool has(Protocol p) const = 0;
  // Bytes per hop of each pattern for a collective of total size `bytes` (S).
  [[nodiscard]] virtual Traffic traffic(graph::OpKind kind, const GroupShape& shape, double bytes) const = 0;
  // NCCL's latency term, in seconds.
  [[nodiscard]] virtual double latency(graph::OpKind kind, const GroupShape& shape, Protocol p, const ClusterView& cluster) const = 0;
  [[nodiscard]] virtual Efficiency efficiency(graph::OpKind kind, const GroupShape& shape, Protocol p, const ClusterView& cluster,
                                              double bytes) const = 0;
};

// The algorithms a scenario can name, in the order the tuner tries them (the first wins a tie).
class AlgorithmRegistry : public Registry<std::unique_ptr<Algorithm>> {
 public:
  AlgorithmRegistry() : Registry("collective algorithm") {}
};

// ring, tree, nvls, hierarchical (algorithms.cpp).
void register_builtin_algorithms(AlgorithmRegistry& registry);

}  // namespace shardsim::engine::collectives
