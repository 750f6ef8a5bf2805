// Tile and wave quantization of a GEMM: how much of the GPU its output tiles keep busy.
//
// cuBLAS computes a GEMM's M x N output in tiles, one thread block (CTA) each, and runs the tiles
// over the GPU's SMs in waves: T tiles on S SMs take ceil(T / S) waves, and the last one leaves
// SMs idle unless T is a multiple of S (wave quantization); a dimension that is not a multiple of
// the tile's is padded up to one (tile quantization). NVIDIA, "Matrix Multiplication Background
// User's Guide" (docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication):
// its 256 x 128 tiles and 108 SMs example, and 128 x 256, 256 x 128 and 128 x 128 as cuBLAS's
// most efficient tiles. The library picks its kernel by shape; the model takes, of those three
// tiles, the one that keeps the SMs busiest [assumed: equal speed per tile].
//
// A GEMM with fewer tiles than SMs has its reduction (K) split over several CTAs per tile
// (split-K), as many as fill the SMs once, each slice keeping at least kMinSplitK of K
// [assumed: 8 steps of cuBLAS's 64-deep K tiles]; the partial sums' reduction is not priced.
//
// fill = M N s / (waves x S x tile_m x tile_n), s the K-splits: the share of the SMs' tile-time
// that computes the output. The compute model (engine/compute_model.hpp) prices a GEMM's FLOPs at
// the topology's rate x fill / the reference block's fill, so that the rate keeps its meaning.
#pragma once

#include <cstdint>

namespace shardsim::engine {

inline constexpr std::int64_t kMinSplitK = 512;

struct TileFill {
  int tile_m = 0;
  int tile_n = 0;
  std::int64_t tiles = 0;   // output tiles
  std::int64_t splits = 1;  // K slices per tile (split-K)
  std::int64_t waves = 0;
  double fill = 1;  // share of the SMs' tile-time spent on the output
};

// The best of the three tiles for an m x n output of reduction length k on `sms` SMs.
[[nodiscard]] TileFill gemm_tile_fill(std::int64_t m, std::int64_t n, std::int64_t k, int sms);

// The reference block's fill (graph::reference_block: Llama 3 8B's 21 GEMMs at 16,384 tokens):
// their FLOPs over the sum of each one's FLOPs / fill, so its time-weighted mean.
[[nodiscard]] double reference_tile_fill(int sms);

}  // namespace shardsim::engine
