// Device memory a training process holds outside PyTorch's caching allocator: the CUDA context
// and NCCL's communication buffers. It is not in PyTorch's reserved figure, but it comes out of
// the same GPU, so the allocator has that much less to grow into.
#pragma once

#include "config/topology.hpp"
#include "graph/step_graph.hpp"

namespace shardsim::graph {

// One NCCL connection's buffers, one per protocol at NCCL's default sizes (src/init.cc
// computeBuffSizes; src/include/device.h): LL 8 lines x 512 threads x 8 steps x 16 B = 524,288 B,
// LL128 120 elements x 640 threads x 8 steps x 8 B = 4,915,200 B, Simple 4 MiB.
inline constexpr double kNcclConnectionBytes = 524'288.0 + 4'915'200.0 + 4'194'304.0;

struct OutsideAllocator {
  double context = 0;     // the CUDA context
  double nccl = 0;        // NCCL's buffers, all communicators
  int communicators = 0;  // NCCL communicators the rank belongs to
  int channels = 0;       // channels per communicator (node.nccl_channels)
  [[nodiscard]] double total() const { return context + nccl; }
};

// What one rank holds outside the allocator: the context, and per communicator (one per parallel
// group of more than one rank: tensor, context, shard, replicate, FSDP2's reshard group, pipeline)
// the channels' connection buffers, one connection per peer and channel (a ring's rank receives
// from one peer, a pipeline stage from the stages before and after it).
[[nodiscard]] OutsideAllocator outside_allocator(const GraphInfo& info, const config::TopologyConfig& topology);

}  // namespace shardsim::graph
