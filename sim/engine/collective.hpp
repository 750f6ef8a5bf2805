// Collective algorithms turn one collective over a group of ranks into network traffic (which
// SimGrid shares with every other flow on the same links) plus a latency term.
//
// Traffic is a list of paths. A path is a set of hops (rank -> rank over NVLink or over the
// NICs) that carry the same bytes in lockstep, as the edges of one ring do. The engine runs a
// path either as one flow per hop ("edge" flows) or as a single flow through every link of the
// path ("path" flows, the default): for a ring, whose steps advance together, the second is the
// same on a symmetric fabric and costs O(1) flows instead of O(n).
//
// Contract of plan():
//  - it depends only on its arguments;
//  - a hop's bytes are what its links carry (protocol overheads included), and the collective
//    ends `latency` seconds after its last path is through;
//  - the paths' number, order and hops depend on (kind, ranks, cluster) only, never on `bytes`:
//    the engine builds the routes of a group's paths once, from a plan of 1 byte, and reuses them
//    for every size. A path an algorithm does not use at some size has bytes 0 (no flow).
// The built-in implementation is collectives::Collectives (engine/collectives/collectives.hpp),
// which picks an NCCL algorithm and protocol per collective and size.
#pragma once

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
  // Which of the hop's flows this is, where an ECMP fabric hashes each on its own (fabric.routing:
  // ecmp; the engine splits a path into its lanes, an algorithm leaves it 0).
  int lane = 0;
};

struct Path {
  std::vector<Hop> hops;
  double bytes = 0;  // carried by every hop
};

struct CollectivePlan {
  std::vector<Path> paths;
  double latency = 0;  // seconds added to the time the data takes
};

// What an algorithm may know of the cluster. cluster_view() fills every field from a topology;
// a view filled by hand leaves the later fields at their defaults (one NIC per GPU, no NVLS).
struct ClusterView {
  int gpus_per_node = 8;
  config::LinkSpec nvlink;
  config::LinkSpec nic;
  double switch_latency = 0;
  int nics_per_node = 0;     // NICs the GPUs of a node share; 0: one per GPU
  bool nvls = false;         // NVLink SHARP (node.nvls)
  bool nvlink_mesh = false;  // a link per GPU pair, 1/(gpus_per_node - 1) of nvlink each (node.nvlink_mesh)
  config::GpuArch arch = config::GpuArch::hopper;
  config::CpuVendor cpu = config::CpuVendor::intel;
  // Symmetric mode: plans keep, of each path, only the hops leaving its busiest node (patterns.hpp).
  bool busiest_node_only = false;

  // AMD GPUs run RCCL, whose tuner picks by its own tables (collectives/rccl_model.hpp).
  [[nodiscard]] bool uses_rccl() const { return arch == config::GpuArch::cdna3; }
  [[nodiscard]] int node_of(int rank) const { return rank / gpus_per_node; }
  // The NVLink bandwidth one hop between two GPUs gets: a port's, or in a mesh a pair's.
  [[nodiscard]] double nvlink_pair_share() const { return nvlink_mesh ? 1.0 / (gpus_per_node - 1) : 1.0; }
  [[nodiscard]] int nics() const { return nics_per_node > 0 ? nics_per_node : gpus_per_node; }
  // The NIC a rank sends through, numbered across the cluster: node * nics() + index in node.
  [[nodiscard]] int nic_of(int rank) const { return node_of(rank) * nics() + rank % gpus_per_node * nics() / gpus_per_node; }
};

[[nodiscard]] ClusterView cluster_view(const config::TopologyConfig& topo);

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // `ranks` in ring order; `bytes` is the collective's total buffer size S.
  [[nodiscard]] virtual CollectivePlan plan(graph::OpKind kind, std::span<const int> ranks, double bytes,
                                            const ClusterView& cluster) const = 0;
};

}  // namespace shardsim::engine
