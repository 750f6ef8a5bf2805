#include "graph/groups.hpp"

namespace shardsim::graph {

Groups::Groups(const GraphInfo& info)
    : world_(info.world_size),
      cp_(info.cp_group),
      pp_(info.pp_group),
      tp_(info.tp_group),
      shard_(info.shard_group),
      reshard_(info.reshard_group) {}

int Groups::size(Group g) const {
  switch (g) {
    case Group::shard:
      return shard_;
    case Group::replicate:
      return world_ / (pp_ * shard_ * tp_);
    case Group::pp:
      return 2;
    case Group::cp:
      return cp_;
    case Group::reshard:
      return reshard_;
    case Group::tp:
      return tp_;
    case Group::world:
    case Group::none:
      return world_;
  }
  return world_;
}

int Groups::stride(Group g) const {
  switch (g) {
    case Group::shard:
    case Group::reshard:
    case Group::cp:
      return tp_;
    case Group::replicate:
      return shard_ * tp_;
    default:
      return 1;
  }
}

int Groups::instance_of(Group g, int rank) const {
  if (g == Group::pp) return rank % (world_ / pp_);
  const int span = size(g) * stride(g);  // ranks in one block of instances
  return rank / span * stride(g) + rank % stride(g);
}

std::vector<int> Groups::members(Group g, int instance, int stage, int peer_stage) const {
  if (g == Group::pp) return {stage * (world_ / pp_) + instance, peer_stage * (world_ / pp_) + instance};
  const int n = size(g);
  const int s = stride(g);
  const int base = instance / s * s * n + instance % s;
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(base + i * s);
  return out;
}

}  // namespace shardsim::graph
