#include "graph/outside_allocator.hpp"

namespace shardsim::graph {

OutsideAllocator outside_allocator(const GraphInfo& info, const config::TopologyConfig& topology) {
  OutsideAllocator o;
  o.context = topology.gpu.context_memory.value();
  if (info.world_size <= 1) return o;
  o.channels = topology.node.nccl_channels;
  int connections = 0;  // per channel, over all communicators
  auto ring = [&](int ranks) {
    if (ranks <= 1) return;
    ++o.communicators;
    ++connections;
  };
  ring(info.tp_group);
  ring(info.cp_group);
  ring(info.shard_group);
  ring(info.replicate_group);
  if (info.reshard_group < info.shard_group) ring(info.reshard_group);
  if (info.pp_group > 1) {
    ++o.communicators;
    connections += info.pp_group > 2 ? 2 : 1;
  }
  o.nccl = static_cast<double>(connections) * o.channels * kNcclConnectionBytes;
  return o;
}

}  // namespace shardsim::graph
