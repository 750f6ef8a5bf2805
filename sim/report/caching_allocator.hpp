// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), enough to
// turn allocations and frees into reserved memory:
// - request sizes round up to 512-byte blocks;
// - requests up to 1 MiB come from a small pool of 2 MiB segments, larger ones from a large
//   pool: 20 MiB segments for requests under 10 MiB, else the size rounded up to 2 MiB;
// - a request takes the smallest cached free block that fits (best fit), splitting off the rest
//   when it is large enough (>= 512 B small, > 1 MiB large); freed blocks merge with free
//   neighbours of the same segment; segments are never returned (no empty_cache);
// - each stream has its own pools: a block freed on one stream is not given to another;
// - with a capacity (the GPU's memory), a new segment that would take reserved memory past it
//   first releases every cached segment that is wholly free, as c10 does before it retries the
//   cudaMalloc (release_cached_blocks; counted as num_alloc_retries), and the allocation fails
//   (CUDA out of memory) when that is not enough. A failed allocation is still made, so that the
//   rest of the step can be followed.
// - with expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), each of those
//   pools is one segment that grows: a request no cached block fits maps pages (2 MiB small,
//   20 MiB large) at the segment's end, merged with the free block there if there is one, so
//   that a request never needs a new segment of its own size; releasing the cache unmaps the
//   free pages at the segment's end (c10 also unmaps free pages inside it, not modelled).
// A tensor is identified by its size: a free releases a live block of that size in that pool,
// the first allocated; where one of several live tensors of a size must be told from the others,
// the allocation and its free carry the same tensor number (graph::MemEffect::tensor).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "graph/op.hpp"

namespace shardsim::report {

// The allocator's limit and mode: the memory it may reserve (the GPU's, less what is held outside
// it) and PYTORCH_CUDA_ALLOC_CONF's expandable_segments (training.expandable_segments).
struct AllocatorSettings {
  AllocatorSettings(double bytes = std::numeric_limits<double>::infinity(), bool expandable = false)  // NOLINT: a capacity
      : capacity(bytes), expandable_segments(expandable) {}
  double capacity;
  bool expandable_segments;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(const AllocatorSettings& settings = {})
      : capacity_(settings.capacity), expandable_(settings.expandable_segments) {}
  void allocate(graph::Pool pool, double bytes, int tensor = -1);
  void free(graph::Pool pool, double bytes, int tensor = -1);

  [[nodiscard]] double allocated() const { return static_cast<double>(allocated_); }
  [[nodiscard]] double reserved() const { return static_cast<double>(reserved_); }
  [[nodiscard]] double reserved(graph::Pool pool) const;
  // Frees that matched no live block of their size (a sign the graph's effects do not pair up).
  [[nodiscard]] int unpaired_frees() const { return unpaired_; }
  // Allocations that had to release the cache first (each a cudaFree of cached segments and a
  // device synchronize in PyTorch), and those that failed even then.
  [[nodiscard]] int retries() const { return retries_; }
  [[nodiscard]] int failures() const { return failures_; }

  [[nodiscard]] static std::int64_t round_size(double bytes);

 private:
  struct Block {
    std::int64_t size = 0;
    bool free = true;
  };
  struct Segment {
    std::map<std::int64_t, Block> blocks;  // by offset; empty once released
    std::size_t pool = 0;                  // index into pools_
    std::int64_t size = 0;                 // mapped, for an expandable one
    bool expandable = false;
  };
  using FreeKey = std::tuple<std::int64_t, int, std::int64_t>;  // size, segment, offset
  struct PoolState {
    std::set<FreeKey> free_blocks;
    std::multimap<std::int64_t, std::tuple<int, std::int64_t, int>> live;  // size -> (segment, offset, tensor)
    std::int64_t reserved = 0;
    int expandable = -1;  // its expandable segment, once made
  };

  PoolState& state(graph::Pool pool, std::int64_t size);
  // A new segment for a request of `size` no cached block fits (or the expandable segment grown
  // for it): (segment, offset, size) of the free block that now fits it.
  std::tuple<int, std::int64_t, std::int64_t> new_block(PoolState& p, std::int64_t size);
  std::tuple<int, std::int64_t, std::int64_t> grow(PoolState& p, std::int64_t size);
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> free_tail(int segment) const;  // (offset, size), size 0: none
  void unmap_free_tail(PoolState& p);
  // The capacity check before `bytes` more are reserved: releases the cache when they would not fit.
  void make_room(std::int64_t bytes);
  void release(PoolState& p, int segment, std::int64_t offset);
  void release_cached();
  void note_wholly_free(int segment);

  std::vector<Segment> segments_;
  // Segments whose one block is free: what release_cached() returns, found without scanning
  // every segment (a scan per retry made the model quadratic in the number of retries).
  std::set<int> wholly_free_;
  std::array<PoolState, 2 * graph::kPools> pools_{};  // [pool][small, large]
  std::int64_t allocated_ = 0;
  std::int64_t reserved_ = 0;
  int unpaired_ = 0;
  double capacity_;
  bool expandable_;
  int retries_ = 0;
  int failures_ = 0;
};

}  // namespace shardsim::report
