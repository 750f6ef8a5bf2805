#include "cuda/empty_kernel.hpp"

namespace shardsim::replay {
namespace {

__global__ void empty_kernel() {}

}  // namespace

cudaError_t launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace shardsim::replay
