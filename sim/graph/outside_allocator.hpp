// Device memory a training process holds outside PyTorch's caching allocator: the CUDA context
// and NCCL's communication buffers. It is not in PyTorch's reserved figure, but it comes out of
// the same GPU, so the allocator has that much less to grow into.
#pragma once

#include <span>

#include "config/topology.hpp"
#include "graph/step_graph.hpp"

namespace shardsim::graph {

// One NCCL connection's buffers, one per protocol at NCCL's default sizes (src/init.cc
// computeBuffSizes; src/include/device.h): LL 8 lines x 512 threads x 8 steps x 16 B = 524,288 B,
// LL128 120 elements x 640 threads x 8 steps x 8 B = 4,915,200 B, Simple 4 MiB.
inline constexpr double kNcclConnectionBytes = 524'288.0 + 4'915'200.0 + 4'194'304.0;

// NVLS's buffers on one rank of a communicator (src/transport/nvls.cc ncclNvlsBufferSetup): per
// NVLS channel (16 on Hopper; on Blackwell 24 within a node, 32 across nodes) two of 8 steps of
// 128 KiB (NCCL_NVLS_CHUNKSIZE) for each head, one head per rank of the group on the node (at most
// 32): 256 MiB for 8 ranks on Hopper. `nodes`: the communicator's nodes.
[[nodiscard]] double nvls_buffer_bytes(config::GpuArch arch, int ranks_per_node, int nodes);

// Point-to-point sends across nodes (a pipeline's) on one rank: not a connection's own buffers but
// the shared pools of src/transport/net.cc ("only allocate dedicated buffers for ring/tree, not
// for p2p"), one to send and one to receive, each p2pnChannels (the channels rounded up to a
// power of two) x NCCL_SHARED_STEPS (16) x NCCL_P2P_NET_CHUNKSIZE (128 KiB): 64 MiB at 16 channels.
[[nodiscard]] double net_p2p_buffer_bytes(int channels);

// The NCCL algorithms one communicator's collectives ran in the step (the tuner's choices). NCCL
// (2.22 and later: NCCL_RUNTIME_CONNECT) connects an algorithm's peers, and allocates their
// buffers, when the communicator first runs it. A pipeline's (Group::pp) says where its stages are.
struct CommunicatorUse {
  Group group = Group::none;
  int ranks_per_node = 1;  // the group's ranks on one node
  int nodes = 1;           // the nodes the group spans
  bool ring = false;       // the ring (or shardsim's hierarchical algorithm, made of rings)
  bool tree = false;       // the double binary tree
  bool nvls = false;       // NVLS, or NVLS_TREE across nodes
};

struct OutsideAllocator {
  double context = 0;     // the CUDA context
  double nccl = 0;        // NCCL's buffers, all communicators
  double tree = 0;        // of which the trees' connections
  double nvls = 0;        // of which NVLS's
  double p2p = 0;         // of which the shared pools of sends across nodes
  int communicators = 0;  // NCCL communicators the rank belongs to
  int channels = 0;       // channels per communicator (node.nccl_channels)
  [[nodiscard]] double total() const { return context + nccl; }
};

// What one rank holds outside the allocator: the context, and per communicator (one per parallel
// group of more than one rank: tensor, context, shard, replicate, FSDP2's reshard group, pipeline)
// the channels' connection buffers, one per peer and channel: a ring's rank receives from one
// peer, a tree's from about two (up and down a chain through the node; the chain's head also
// from the parent and children nodes: (P - 1 + (n - 1) / n) x 2 / P of them on average, at most
// two here), a pipeline stage on the same node from the stages before and after it (across nodes
// the shared pools of net_p2p_buffer_bytes); and NVLS's buffers. `used`:
// the algorithms each group's collectives ran (the engine's SimulationResult::communicators);
// a group it does not list (or all, when it is empty, as before a simulation) is taken to run
// the ring alone.
[[nodiscard]] OutsideAllocator outside_allocator(const GraphInfo& info, const config::TopologyConfig& topology,
                                                 std::span<const CommunicatorUse> used = {});

}  // namespace shardsim::graph
