#include "report/caching_allocator.hpp"

#include <algorithm>
#include <cmath>

namespace shardsim::report {
namespace {

constexpr std::int64_t kMinBlock = 512;
constexpr std::int64_t kSmallSize = 1 << 20;     // requests up to 1 MiB use the small pool
constexpr std::int64_t kSmallBuffer = 2 << 20;   // small pool segments
constexpr std::int64_t kLargeBuffer = 20 << 20;  // segments for 1-10 MiB requests
constexpr std::int64_t kMinLargeAlloc = 10 << 20;
constexpr std::int64_t kRoundLarge = 2 << 20;

std::int64_t segment_size(std::int64_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

bool should_split(std::int64_t request, std::int64_t remaining) {
  return request <= kSmallSize ? remaining >= kMinBlock : remaining > kSmallSize;
}

}  // namespace

std::int64_t CachingAllocator::round_size(double bytes) {
  const auto b = static_cast<std::int64_t>(std::ceil(bytes));
  if (b < kMinBlock) return kMinBlock;
  return (b + kMinBlock - 1) / kMinBlock * kMinBlock;
}

CachingAllocator::PoolState& CachingAllocator::state(graph::Pool pool, std::int64_t size) {
  return pools_[static_cast<std::size_t>(2 * static_cast<int>(pool) + (size <= kSmallSize ? 0 : 1))];
}

double CachingAllocator::reserved(graph::Pool pool) const {
  const auto i = static_cast<std::size_t>(2 * static_cast<int>(pool));
  return static_cast<double>(pools_[i].reserved + pools_[i + 1].reserved);
}

void CachingAllocator::allocate(graph::Pool pool, double bytes, int tensor) {
  if (bytes <= 0) return;
  const std::int64_t size = round_size(bytes);
  PoolState& p = state(pool, size);
  auto it = p.free_blocks.lower_bound(FreeKey{size, -1, -1});
  int seg = 0;
  std::int64_t offset = 0;
  std::int64_t block_size = 0;
  if (it != p.free_blocks.end()) {
    std::tie(block_size, seg, offset) = *it;
    p.free_blocks.erase(it);
    wholly_free_.erase(seg);
  } else {
    std::tie(seg, offset, block_size) = expandable_ ? grow(p, size) : new_block(p, size);
  }
  auto& blocks = segments_[static_cast<std::size_t>(seg)].blocks;
  if (should_split(size, block_size - size)) {
    blocks[offset] = Block{size, false};
    blocks[offset + size] = Block{block_size - size, true};
    p.free_blocks.insert(FreeKey{block_size - size, seg, offset + size});
  } else {
    blocks[offset] = Block{block_size, false};
  }
  p.live.emplace(size, std::make_tuple(seg, offset, tensor));
  allocated_ += blocks[offset].size;
}

void CachingAllocator::make_room(std::int64_t bytes) {
  if (static_cast<double>(reserved_ + bytes) <= capacity_) return;
  ++retries_;
  release_cached();
  if (static_cast<double>(reserved_ + bytes) > capacity_) ++failures_;
}

std::tuple<int, std::int64_t, std::int64_t> CachingAllocator::new_block(PoolState& p, std::int64_t size) {
  const std::int64_t block_size = segment_size(size);
  make_room(block_size);
  const int seg = static_cast<int>(segments_.size());
  segments_.push_back(Segment{{{0, Block{block_size, true}}}, static_cast<std::size_t>(&p - pools_.data()), block_size});
  p.reserved += block_size;
  reserved_ += block_size;
  return {seg, 0, block_size};
}

std::pair<std::int64_t, std::int64_t> CachingAllocator::free_tail(int segment) const {
  const Segment& s = segments_[static_cast<std::size_t>(segment)];
  if (s.blocks.empty()) return {s.size, 0};
  const auto& [offset, block] = *s.blocks.rbegin();
  return block.free ? std::pair{offset, block.size} : std::pair{s.size, std::int64_t{0}};
}

std::tuple<int, std::int64_t, std::int64_t> CachingAllocator::grow(PoolState& p, std::int64_t size) {
  const auto pool = static_cast<std::size_t>(&p - pools_.data());
  const std::int64_t page = pool % 2 == 0 ? kSmallBuffer : kLargeBuffer;
  if (p.expandable < 0) {
    p.expandable = static_cast<int>(segments_.size());
    segments_.push_back(Segment{{}, pool, 0, true});
  }
  const int seg = p.expandable;
  const auto pages_for = [&](std::int64_t have) { return (size - have + page - 1) / page * page; };
  make_room(pages_for(free_tail(seg).second));
  const auto [offset, have] = free_tail(seg);  // releasing the cache may have unmapped some of it
  const std::int64_t added = pages_for(have);
  Segment& s = segments_[static_cast<std::size_t>(seg)];
  if (have > 0) p.free_blocks.erase(FreeKey{have, seg, offset});
  s.blocks[offset] = Block{have + added, true};
  s.size += added;
  p.reserved += added;
  reserved_ += added;
  return {seg, offset, have + added};
}

// The whole pages of the free block at the end of the pool's expandable segment.
void CachingAllocator::unmap_free_tail(PoolState& p) {
  const std::int64_t page = (&p - pools_.data()) % 2 == 0 ? kSmallBuffer : kLargeBuffer;
  const int seg = p.expandable;
  const auto [offset, have] = free_tail(seg);
  if (have == 0) return;
  const std::int64_t keep = (offset + page - 1) / page * page - offset;  // up to the first page boundary
  if (keep >= have) return;
  Segment& s = segments_[static_cast<std::size_t>(seg)];
  p.free_blocks.erase(FreeKey{have, seg, offset});
  if (keep > 0) {
    s.blocks[offset].size = keep;
    p.free_blocks.insert(FreeKey{keep, seg, offset});
  } else {
    s.blocks.erase(offset);
  }
  s.size -= have - keep;
  p.reserved -= have - keep;
  reserved_ -= have - keep;
}

void CachingAllocator::free(graph::Pool pool, double bytes, int tensor) {
  if (bytes <= 0) return;
  const std::int64_t size = round_size(bytes);
  PoolState& p = state(pool, size);
  // The block of this tensor; an unnumbered free takes the first unnumbered block of its size,
  // else the first of that size.
  const auto [first, last] = p.live.equal_range(size);
  auto it = std::find_if(first, last, [tensor](const auto& b) { return std::get<2>(b.second) == tensor; });
  if (it == last && tensor < 0) it = first;
  if (it == last) {
    ++unpaired_;
    return;
  }
  const auto [seg, offset, number] = it->second;
  p.live.erase(it);
  release(p, seg, offset);
}

void CachingAllocator::release_cached() {
  for (const int i : wholly_free_) {
    Segment& s = segments_[static_cast<std::size_t>(i)];
    PoolState& p = pools_[s.pool];
    p.free_blocks.erase(FreeKey{s.size, i, 0});
    p.reserved -= s.size;
    reserved_ -= s.size;
    s.blocks.clear();
  }
  wholly_free_.clear();
  for (PoolState& p : pools_) {
    if (p.expandable >= 0) unmap_free_tail(p);
  }
}

void CachingAllocator::note_wholly_free(int segment) {
  const Segment& s = segments_[static_cast<std::size_t>(segment)];
  if (s.expandable) return;  // released by unmapping its free tail (release_cached)
  if (s.blocks.size() == 1 && s.blocks.begin()->second.free) wholly_free_.insert(segment);
}

void CachingAllocator::release(PoolState& p, int segment, std::int64_t offset) {
  auto& blocks = segments_[static_cast<std::size_t>(segment)].blocks;
  auto it = blocks.find(offset);
  allocated_ -= it->second.size;
  it->second.free = true;
  // Merge with the free neighbours.
  if (auto next = std::next(it); next != blocks.end() && next->second.free) {
    p.free_blocks.erase(FreeKey{next->second.size, segment, next->first});
    it->second.size += next->second.size;
    blocks.erase(next);
  }
  if (it != blocks.begin()) {
    auto prev = std::prev(it);
    if (prev->second.free) {
      p.free_blocks.erase(FreeKey{prev->second.size, segment, prev->first});
      prev->second.size += it->second.size;
      blocks.erase(it);
      it = prev;
    }
  }
  p.free_blocks.insert(FreeKey{it->second.size, segment, it->first});
  note_wholly_free(segment);
}

}  // namespace shardsim::report
