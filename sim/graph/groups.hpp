// Which ranks a collective of each group kind spans (op.hpp Group), from the graph's info. Ranks
// are laid out as torchtitan's DeviceMesh lays them out, innermost dimension first:
//   rank = ((stage x replicate + replicate index) x shard + shard index) x tp + tp index
// where with context parallelism the shard index counts dp_shard x cp (torchtitan shards
// parameters over dp_shard_cp), cp innermost of it: a CP group is cp members of a shard group
// that are tp apart.
// so a TP group is `tp_group` consecutive ranks (inside a node when it fits), a shard group takes
// every tp_group-th rank of a block of shard_group x tp_group, a replicate group every
// (shard_group x tp_group)-th rank, and a reshard group (FSDP2 reshard_after_forward = d) d
// consecutive members of a shard group. A pipeline pair (Group::pp) is one rank of a stage and
// the rank of the same place in another stage, world / pp ranks apart: its instances are the
// places in a stage, and which two stages it joins is the op's (Op::stage, Op::peer_stage).
// The simulator and the replay harness both use this.
#pragma once

#include <vector>

#include "graph/step_graph.hpp"

namespace shardsim::graph {

class Groups {
 public:
  explicit Groups(const GraphInfo& info);

  [[nodiscard]] int size(Group g) const;
  [[nodiscard]] int instances(Group g) const { return g == Group::pp ? world_ / pp_ : world_ / size(g); }
  [[nodiscard]] int instance_of(Group g, int rank) const;
  // For Group::pp, the sender in `stage` first and the receiver in `peer_stage`.
  [[nodiscard]] std::vector<int> members(Group g, int instance, int stage = 0, int peer_stage = 0) const;

 private:
  // Members of an instance are `stride` apart; instances of one block of size x stride ranks
  // are consecutive.
  [[nodiscard]] int stride(Group g) const;

  int world_;
  int cp_;
  int pp_;
  int tp_;
  int shard_;
  int reshard_;
};

}  // namespace shardsim::graph
