#include "graph/outside_allocator.hpp"

#include <algorithm>

namespace shardsim::graph {

double nvls_buffer_bytes(config::GpuArch arch, int ranks_per_node, int nodes) {
  constexpr double kStep = 128.0 * 1024;  // NCCL_NVLS_CHUNKSIZE
  constexpr int kSteps = 8;               // NCCL_STEPS
  const int channels = arch == config::GpuArch::blackwell ? (nodes > 1 ? 32 : 24) : 16;
  return channels * 2.0 * kStep * kSteps * std::min(ranks_per_node, 32);
}

OutsideAllocator outside_allocator(const GraphInfo& info, const config::TopologyConfig& topology, std::span<const CommunicatorUse> used) {
  OutsideAllocator o;
  o.context = topology.gpu.context_memory.value();
  if (info.world_size <= 1) return o;
  o.channels = topology.node.nccl_channels;
  int connections = 0;  // per channel, over all communicators
  auto communicator = [&](Group group, int ranks) {
    if (ranks <= 1) return;
    ++o.communicators;
    const auto use = std::find_if(used.begin(), used.end(), [&](const CommunicatorUse& u) { return u.group == group; });
    if (use == used.end() || (!use->ring && !use->tree && !use->nvls)) {
      ++connections;
      return;
    }
    if (use->ring) ++connections;
    if (use->tree) connections += 2;
    if (use->nvls) o.nvls += nvls_buffer_bytes(topology.gpu.arch, use->ranks_per_node, use->nodes);
  };
  communicator(Group::tp, info.tp_group);
  communicator(Group::cp, info.cp_group);
  communicator(Group::shard, info.shard_group);
  communicator(Group::replicate, info.replicate_group);
  if (info.reshard_group < info.shard_group) communicator(Group::reshard, info.reshard_group);
  if (info.pp_group > 1) {
    ++o.communicators;
    connections += info.pp_group > 2 ? 2 : 1;
  }
  o.nccl = static_cast<double>(connections) * o.channels * kNcclConnectionBytes + o.nvls;
  return o;
}

}  // namespace shardsim::graph
