// Which ranks a collective of each group kind spans (op.hpp Group), from the graph's info. Ranks
// are laid out as torchtitan's DeviceMesh lays them out, innermost dimension first:
//   rank = (replicate index x shard + shard index) x tp + tp index
// so a TP group is `tp_group` consecutive ranks (inside a node when it fits), a shard group takes
// every tp_group-th rank of a block of shard_group x tp_group, a replicate group every
// (shard_group x tp_group)-th rank, and a reshard group (FSDP2 reshard_after_forward = d) d
// consecutive members of a shard group. The simulator and the replay harness both use this.
#pragma once

#include <vector>

#include "graph/step_graph.hpp"

namespace shardsim::graph {

class Groups {
 public:
  explicit Groups(const GraphInfo& info);

  [[nodiscard]] int size(Group g) const;
  [[nodiscard]] int instances(Group g) const { return world_ / size(g); }
  [[nodiscard]] int instance_of(Group g, int rank) const;
  [[nodiscard]] std::vector<int> members(Group g, int instance) const;

 private:
  // Members of an instance are `stride` apart; instances of one block of size x stride ranks
  // are consecutive.
  [[nodiscard]] int stride(Group g) const;

  int world_;
  int tp_;
  int shard_;
  int reshard_;
};

}  // namespace shardsim::graph
