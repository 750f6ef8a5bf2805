#include <cuda_fp8.h>

#include "cuda/device_kernels.hpp"

namespace shardsim::replay {
namespace {

__global__ void empty_kernel() {}

// splitmix64's finalizer: a well-mixed 32-bit value per (index, seed).
__device__ std::uint32_t mix(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ULL + seed;
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return static_cast<std::uint32_t>(z ^ (z >> 31U));
}

// About N(0, 1): the sum of four uniform bytes (mean 510, variance 4 x 5,461.25), centred and scaled.
__device__ float normal(std::uint64_t i, std::uint32_t seed) {
  const std::uint32_t h = mix(i, seed);
  const float sum = static_cast<float>((h & 255U) + ((h >> 8U) & 255U) + ((h >> 16U) & 255U) + (h >> 24U));
  return (sum - 510.0F) / 147.8F;
}

__global__ void fill_bf16(std::uint16_t* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = static_cast<std::uint16_t>(__float_as_uint(normal(i, seed)) >> 16U);  // bf16: the float's top half
  }
}

__global__ void fill_e4m3(__nv_fp8_e4m3* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = __nv_fp8_e4m3(normal(i, seed) * (448.0F / 5.0F));  // saturating conversion
  }
}

constexpr int kThreads = 256;
constexpr int kBlocks = 4096;

}  // namespace

cudaError_t launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t fill_random_bf16(void* data, std::size_t elements, std::uint32_t seed, cudaStream_t stream) {
  fill_bf16<<<kBlocks, kThreads, 0, stream>>>(static_cast<std::uint16_t*>(data), elements, seed);
  return cudaGetLastError();
}

cudaError_t fill_random_e4m3(void* data, std::size_t elements, std::uint32_t seed, cudaStream_t stream) {
  fill_e4m3<<<kBlocks, kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), elements, seed);
  return cudaGetLastError();
}

}  // namespace shardsim::replay
