// The CPU backend's kernels: a real fp32 GEMM and a real copy, on shapes scaled down so that a
// replay of a GPU schedule finishes in CI time. Scaling keeps the work proportional: a GEMM's
// three dimensions shrink by cbrt(scale) each (its FLOPs by `scale`), a copy's bytes by `scale`.
#pragma once

#include <cstdint>
#include <vector>

#include "replay/kernel_plan.hpp"

namespace shardsim::replay {

// The shape a GEMM runs at under `scale` (each dimension at least 1; batch kept).
[[nodiscard]] GemmKernel scaled(const GemmKernel& g, double scale);

// Buffers of one stream, grown on demand (first touch happens here, not in a timed kernel).
struct CpuWorkspace {
  std::vector<float> a, b, c;
  std::vector<char> src, dst;
  void reserve(const KernelFootprint& f, double scale);
  // The bytes reserve() allocates for `f` at `scale`.
  [[nodiscard]] static double bytes_for(const KernelFootprint& f, double scale);
};

// y = x W^T over the workspace's buffers, `batch` times.
void cpu_gemm(const GemmKernel& g, CpuWorkspace& ws);
// Copies bytes / 2 (the traffic counts the read and the write), in chunks of the workspace's size.
void cpu_copy(double traffic_bytes, CpuWorkspace& ws);

}  // namespace shardsim::replay
