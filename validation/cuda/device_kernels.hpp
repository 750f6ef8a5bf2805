// The harness's own device kernels (compiled by nvcc: device_kernels.cu): one that does nothing,
// to pay an op's launch cost, and the fills of GEMM operands.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace shardsim::replay {

cudaError_t launch_empty_kernel(cudaStream_t stream);

// GEMM operands of random values, not zeros: a GPU at its power limit runs a GEMM of zeros faster
// than one of random data (fewer transistors switch), so zeros would time it high. bf16 of about
// N(0, 1); float8 e4m3 of the same values scaled so that their largest, about 5, reaches e4m3's
// 448, as tensorwise scaling does. Deterministic in (index, seed).
cudaError_t fill_random_bf16(void* data, std::size_t elements, std::uint32_t seed, cudaStream_t stream);
cudaError_t fill_random_e4m3(void* data, std::size_t elements, std::uint32_t seed, cudaStream_t stream);

}  // namespace shardsim::replay
