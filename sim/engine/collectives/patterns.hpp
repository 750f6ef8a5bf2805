// The hop patterns every collective algorithm's traffic is made of, and what they cost on an
// idle cluster. A group of ranks is "uniform" when it holds the same number of ranks on each of
// its nodes, node by node in ring order (FSDP's shard, replicate and world groups all are):
//
//   intra      rank -> next rank of its node, over NVLink        node 0: a0 -> a1 -> a2 -> a0
//   rail_ring  rank -> rank at its position on the next node     a0 -> b0 -> c0 -> a0 (NICs)
//   rail_tree  both ways along NCCL's double binary tree edges    a0 <-> b0, a0 <-> c0 ... (NICs)
//              over nodes, at every position
//   flat_ring  rank -> next rank of the group (non-uniform groups), NVLink or NIC by node
//
// Each algorithm sets the bytes per hop of each pattern (algorithm.hpp). A GPU's NVLink port
// and a NIC are the resources: an NVSwitch is non-blocking, so per-port loads decide the time.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "engine/collective.hpp"

namespace shardsim::engine::collectives {

struct GroupShape {
  int ranks = 0;
  int nodes = 0;
  int per_node = 0;      // ranks on each node (uniform groups; 0 otherwise)
  bool uniform = false;  // per_node ranks on every node, node after node in ring order
  int per_nic = 1;       // most ranks of the group behind one NIC
};

[[nodiscard]] GroupShape shape_of(std::span<const int> ranks, const ClusterView& cluster);

// Bytes each hop of a pattern carries; 0 where the algorithm does not use the pattern.
struct Traffic {
  double intra = 0;
  double rail_ring = 0;
  double rail_tree = 0;
  double flat_ring = 0;

  // Multiplies intra by `nvlink`, the rail patterns by `nic`, flat_ring (a ring's, whose factors
  // are the same on both) by the larger.
  Traffic& scale(double nvlink, double nic);
};

// The patterns a group of this shape has, in the order plan() returns their paths: flat_ring
// alone for non-uniform groups; otherwise intra (2+ ranks per node; in an NVLink mesh g - 1
// patterns, one per shift r: each member sends to the one r places on), rail_ring and rail_tree
// (2+ nodes). The same for every algorithm and size, as the engine's routes need. With
// cluster.busiest_node_only (symmetric mode), each path keeps only the hops leaving the node that
// sends most of them (the lowest-numbered of equals): what the engine folds a path to, without
// building the hops of every other node.
[[nodiscard]] std::vector<Path> to_paths(const Traffic& t, std::span<const int> ranks, const GroupShape& shape, const ClusterView& cluster);

// Seconds the traffic takes alone on the cluster: the most loaded NVLink port or NIC over its
// rate (LinkSpec bandwidth x efficiency). Like NCCL's tuner, it does not see the fabric above
// the NICs (oversubscribed uplinks slow the simulation, not this estimate).
[[nodiscard]] double transfer_time(const Traffic& t, std::span<const int> ranks, const GroupShape& shape, const ClusterView& cluster);

// NCCL's double binary tree over `n` nodes (src/graph/trees.cc, ncclGetDtree): the parent of
// each node in each of the two trees, -1 at a root. Tree 0 is an in-order binary tree on the
// lowest set bit; tree 1 mirrors it (n even) or shifts it by one (n odd), so that a node inside
// one tree is a leaf in the other.
[[nodiscard]] std::array<std::vector<int>, 2> double_tree_parents(int n);

// Largest number of tree edges (both trees) that meet at one node: the busiest node's NICs send
// and receive that many hops of the rail_tree pattern.
[[nodiscard]] int double_tree_max_degree(int n);

}  // namespace shardsim::engine::collectives
