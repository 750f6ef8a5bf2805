// A kernel that does nothing, to pay an op's launch cost (compiled by nvcc: empty_kernel.cu).
#pragma once

#include <cuda_runtime.h>

namespace shardsim::replay {

cudaError_t launch_empty_kernel(cudaStream_t stream);

}  // namespace shardsim::replay
