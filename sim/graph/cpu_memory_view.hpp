// Device memory as the CPU that issues a step's ops sees it, for the caching allocator's
// backpressure. PyTorch's allocator hands out a block when the CPU asks for it and takes back a
// block freed on the CPU at once, unless another stream still uses it: a block recorded on that
// stream (record_stream) returns to its pool only once the stream's work has finished. When a
// request does not fit in what the GPU leaves to the allocator, cudaMalloc fails and the
// allocator waits for every pending event, frees its cached blocks and tries again
// (c10/cuda/CUDACachingAllocator.cpp: malloc -> release_cached_blocks ->
// synchronize_and_free_events): the CPU stalls until the GPU has caught up with the frees it
// already made, so it cannot run further ahead of the GPU than the GPU's memory allows.
// Fragmentation is left out: what counts is allocated bytes against the allocator's share.
#pragma once

#include <vector>

#include "graph/op.hpp"

namespace shardsim::graph {

class CpuMemoryView {
 public:
  // `capacity`: device bytes the allocator may hold; `initial`: what it holds before the step.
  CpuMemoryView(double capacity, double initial) : capacity_(capacity), live_(initial) {}

  // An issued op's device-memory effects: allocations count at once, and so do the compute
  // stream's frees of blocks only it used; frees of all-gather-pool blocks (gathered on a
  // communication stream, read by compute) and frees by an op of another stream (a copy to the
  // host, recorded on its stream) wait for the op that frees them.
  void issued(const Op& op);
  // A free added to an op already issued (a gathered block released after its last use).
  void free_after(const Op& op, double bytes);
  // The ops the CPU must wait for before `bytes` more fit (the last pending free of each stream:
  // a stream runs its ops in order), now counted as freed; none if the bytes fit already or no
  // pending free is left to wait for (the allocation then goes over: out of memory).
  [[nodiscard]] std::vector<int> make_room(double bytes);
  [[nodiscard]] double live() const { return live_; }

 private:
  struct PendingFree {
    int op;
    Stream stream;
    double bytes;
  };
  double capacity_;
  double live_;
  std::vector<PendingFree> pending_;
};

}  // namespace shardsim::graph
