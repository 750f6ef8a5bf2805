#include "engine/gemm_tiles.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "graph/op.hpp"

namespace shardsim::engine {
namespace {

constexpr std::array<std::array<int, 2>, 3> kTiles{{{128, 256}, {256, 128}, {128, 128}}};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

TileFill gemm_tile_fill(std::int64_t m, std::int64_t n, std::int64_t k, int sms) {
  if (m <= 0 || n <= 0 || k <= 0 || sms <= 0) throw std::invalid_argument("gemm_tile_fill: empty GEMM or no SMs");
  TileFill best;
  best.fill = 0;
  for (const auto& [tm, tn] : kTiles) {
    TileFill f;
    f.tile_m = tm;
    f.tile_n = tn;
    f.tiles = ceil_div(m, tm) * ceil_div(n, tn);
    if (f.tiles < sms) f.splits = std::max<std::int64_t>(1, std::min(sms / f.tiles, k / kMinSplitK));
    f.waves = ceil_div(f.tiles * f.splits, sms);
    f.fill =
        static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(f.splits) / (static_cast<double>(f.waves) * sms * tm * tn);
    if (f.fill > best.fill) best = f;  // the first of equals: the larger tiles come first
  }
  return best;
}

double reference_tile_fill(int sms) {
  return graph::reference_block_mean([sms](const graph::Gemm& g) { return gemm_tile_fill(g.m, g.n, g.k, sms).fill; });
}

}  // namespace shardsim::engine
