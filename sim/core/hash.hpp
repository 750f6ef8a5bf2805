// A 64-bit mixing function for reproducible draws (per-rank jitter, ECMP's spine per flow).
#pragma once

#include <cstdint>

namespace shardsim {

// splitmix64's finalizer (Steele, Lea and Flood 2014): consecutive inputs give unrelated outputs.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

}  // namespace shardsim
