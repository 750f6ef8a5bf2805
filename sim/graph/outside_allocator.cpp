#include "graph/outside_allocator.hpp"

#include <algorithm>

namespace shardsim::graph {

double nvls_buffer_bytes(config::GpuArch arch, int ranks_per_node, int nodes) {
  constexpr double kStep = 128.0 * 1024;  // NCCL_NVLS_CHUNKSIZE
  constexpr int kSteps = 8;               // NCCL_STEPS
  const int channels = arch == config::GpuArch::blackwell ? (nodes > 1 ? 32 : 24) : 16;
  return channels * 2.0 * kStep * kSteps * std::min(ranks_per_node, 32);
}

double net_p2p_buffer_bytes(int channels) {
  constexpr double kChunk = 128.0 * 1024;  // NCCL_P2P_NET_CHUNKSIZE
  constexpr int kSharedSteps = 16;         // NCCL_SHARED_STEPS
  int p2p_channels = 1;                    // pow2Up(min(channels, 64))
  while (p2p_channels < std::min(channels, 64)) p2p_channels *= 2;
  return 2.0 * p2p_channels * kSharedSteps * kChunk;
}

OutsideAllocator outside_allocator(const GraphInfo& info, const config::TopologyConfig& topology, std::span<const CommunicatorUse> used) {
  OutsideAllocator o;
  o.context = topology.gpu.context_memory.value();
  if (info.world_size <= 1) return o;
  o.channels = topology.node.nccl_channels;
  int connections = 0;  // per channel, over all communicators
  const auto use_of = [&](Group group) {
    return std::find_if(used.begin(), used.end(), [&](const CommunicatorUse& u) { return u.group == group; });
  };
  auto communicator = [&](Group group, int ranks) {
    if (ranks <= 1) return;
    ++o.communicators;
    const auto use = use_of(group);
    if (use == used.end() || (!use->ring && !use->tree && !use->nvls)) {
      ++connections;
      return;
    }
    if (use->ring) ++connections;
    if (use->tree) {
      connections += 2;
      o.tree += 2.0 * o.channels * kNcclConnectionBytes;
    }
    if (use->nvls) o.nvls += nvls_buffer_bytes(topology.gpu.arch, use->ranks_per_node, use->nodes);
  };
  communicator(Group::tp, info.tp_group);
  communicator(Group::cp, info.cp_group);
  communicator(Group::shard, info.shard_group);
  communicator(Group::replicate, info.replicate_group);
  if (info.reshard_group < info.shard_group) communicator(Group::reshard, info.reshard_group);
  if (info.pp_group > 1) {
    ++o.communicators;
    const auto use = use_of(Group::pp);
    if (use != used.end() && use->nodes > 1) {
      o.p2p = net_p2p_buffer_bytes(o.channels);
    } else {
      connections += info.pp_group > 2 ? 2 : 1;
    }
  }
  o.nccl = static_cast<double>(connections) * o.channels * kNcclConnectionBytes + o.nvls + o.p2p;
  return o;
}

}  // namespace shardsim::graph
