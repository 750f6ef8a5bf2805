#include "cpu/cpu_kernels.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace shardsim::replay {
namespace {

// Copies larger than this are done in chunks (a CPU has no 1e10-byte buffers to spare).
constexpr std::size_t kMaxCopyChunk = std::size_t{64} << 20U;

std::int64_t shrink(std::int64_t d, double f) {
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(d) * f));
}

// Dot product with eight independent sums, so that the compiler vectorises it without
// -ffast-math (a single running sum fixes the order of the additions).
float dot(const float* x, const float* y, std::int64_t n) {
  std::array<float, 8> s{};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (std::size_t j = 0; j < 8; ++j) s[j] += x[i + static_cast<std::int64_t>(j)] * y[i + static_cast<std::int64_t>(j)];
  }
  float total = 0;
  for (; i < n; ++i) total += x[i] * y[i];
  for (float v : s) total += v;
  return total;
}

}  // namespace

GemmKernel scaled(const GemmKernel& g, double scale) {
  const double f = std::cbrt(scale);
  return {g.batch, shrink(g.m, f), shrink(g.n, f), shrink(g.k, f), g.precision};
}

namespace {

// Elements of a GEMM operand of `e` elements at `scale` (two of its three dimensions shrink by
// cbrt(scale)), and bytes of the copy buffers.
std::size_t scaled_elems(std::int64_t e, double scale) {
  const double dims = std::cbrt(scale);
  return static_cast<std::size_t>(std::max<double>(1, std::ceil(static_cast<double>(e) * dims * dims * 1.1))) + 64;
}
std::size_t copy_buffer(double copy_bytes, double scale) {
  return std::min(kMaxCopyChunk, static_cast<std::size_t>(copy_bytes * scale) + 64);
}

}  // namespace

void CpuWorkspace::reserve(const KernelFootprint& f, double scale) {
  if (a.size() < scaled_elems(f.gemm_a, scale)) a.assign(scaled_elems(f.gemm_a, scale), 0.5F);
  if (b.size() < scaled_elems(f.gemm_b, scale)) b.assign(scaled_elems(f.gemm_b, scale), 0.25F);
  if (c.size() < scaled_elems(f.gemm_c, scale)) c.assign(scaled_elems(f.gemm_c, scale), 0.0F);
  const auto copy = copy_buffer(f.copy_bytes, scale);
  if (src.size() < copy) src.assign(copy, 1);
  if (dst.size() < copy) dst.assign(copy, 0);
}

double CpuWorkspace::bytes_for(const KernelFootprint& f, double scale) {
  const double floats = static_cast<double>(scaled_elems(f.gemm_a, scale) + scaled_elems(f.gemm_b, scale) + scaled_elems(f.gemm_c, scale));
  return floats * sizeof(float) + 2.0 * static_cast<double>(copy_buffer(f.copy_bytes, scale));
}

void cpu_gemm(const GemmKernel& g, CpuWorkspace& ws) {
  const auto need_a = static_cast<std::size_t>(g.batch * g.m * g.k);
  const auto need_b = static_cast<std::size_t>(g.batch * g.n * g.k);
  const auto need_c = static_cast<std::size_t>(g.batch * g.m * g.n);
  if (ws.a.size() < need_a) ws.a.resize(need_a, 0.5F);
  if (ws.b.size() < need_b) ws.b.resize(need_b, 0.25F);
  if (ws.c.size() < need_c) ws.c.resize(need_c, 0.0F);
  for (std::int64_t bi = 0; bi < g.batch; ++bi) {
    const float* x = ws.a.data() + bi * g.m * g.k;
    const float* w = ws.b.data() + bi * g.n * g.k;
    float* y = ws.c.data() + bi * g.m * g.n;
    for (std::int64_t i = 0; i < g.m; ++i) {
      for (std::int64_t j = 0; j < g.n; ++j) y[i * g.n + j] = dot(x + i * g.k, w + j * g.k, g.k);
    }
  }
}

void cpu_copy(double traffic_bytes, CpuWorkspace& ws) {
  auto left = static_cast<std::size_t>(traffic_bytes / 2);
  if (ws.src.size() < std::min(left, kMaxCopyChunk)) {
    ws.src.resize(std::min(left, kMaxCopyChunk), 1);
    ws.dst.resize(std::min(left, kMaxCopyChunk), 0);
  }
  while (left > 0) {
    const std::size_t n = std::min(left, ws.src.size());
    if (n == 0) break;
    std::memcpy(ws.dst.data(), ws.src.data(), n);
    left -= n;
  }
}

}  // namespace shardsim::replay
