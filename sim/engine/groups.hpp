// Which ranks a collective of each group kind spans (graph/op.hpp Group), from the graph's info:
// shard groups are consecutive blocks of `shard_group` ranks, replicate groups take every
// `shard_group`-th rank, reshard groups are consecutive blocks of `reshard_group` ranks.
#pragma once

#include <vector>

#include "graph/step_graph.hpp"

namespace shardsim::engine {

class Groups {
 public:
  explicit Groups(const graph::GraphInfo& info) : world_(info.world_size), shard_(info.shard_group), reshard_(info.reshard_group) {}

  [[nodiscard]] int size(graph::Group g) const;
  [[nodiscard]] int instances(graph::Group g) const { return world_ / size(g); }
  [[nodiscard]] int instance_of(graph::Group g, int rank) const;
  [[nodiscard]] std::vector<int> members(graph::Group g, int instance) const;

 private:
  int world_;
  int shard_;
  int reshard_;
};

}  // namespace shardsim::engine
