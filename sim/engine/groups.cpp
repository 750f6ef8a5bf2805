#include "engine/groups.hpp"

namespace shardsim::engine {

using graph::Group;

int Groups::size(Group g) const {
  switch (g) {
    case Group::shard:
      return shard_;
    case Group::replicate:
      return world_ / shard_;
    case Group::reshard:
      return reshard_;
    case Group::world:
    case Group::none:
      return world_;
  }
  return world_;
}

int Groups::instance_of(Group g, int rank) const {
  switch (g) {
    case Group::shard:
      return rank / shard_;
    case Group::replicate:
      return rank % shard_;
    case Group::reshard:
      return rank / reshard_;
    default:
      return 0;
  }
}

std::vector<int> Groups::members(Group g, int instance) const {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(size(g)));
  switch (g) {
    case Group::shard:
    case Group::reshard:
      for (int i = 0; i < size(g); ++i) out.push_back(instance * size(g) + i);
      break;
    case Group::replicate:
      for (int r = instance; r < world_; r += shard_) out.push_back(r);
      break;
    default:
      for (int r = 0; r < world_; ++r) out.push_back(r);
  }
  return out;
}

}  // namespace shardsim::engine
