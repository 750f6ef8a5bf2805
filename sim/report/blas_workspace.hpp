// The GEMM library's workspaces, which PyTorch allocates through its caching allocator and so
// counts in allocated and reserved memory (aten/src/ATen/cuda/CublasHandlePool.cpp,
// setWorkspaceForHandle / getNewWorkspace): one per (cuBLAS handle, CUDA stream) pair. Handles
// are per thread, and a training step runs its GEMMs on the compute stream from two threads: the
// Python thread (forward) and the autograd engine's thread for the GPU (backward, and the
// recomputation of checkpointed blocks). Each takes its workspace at its first GEMM and keeps it,
// so after the first step both are held throughout: two of `gpu.blas_workspace` (32 MiB each on
// Hopper by default) in the compute stream's pool. Not counted: cuBLASLt's own 1 MiB workspace
// on CUDA (used by _scaled_mm and addmm with a bias; it fits in a small-pool segment).
#pragma once

#include <vector>

#include "config/topology.hpp"
#include "graph/op.hpp"

namespace shardsim::report {

inline constexpr int kGemmThreads = 2;  // forward (Python) and backward (autograd engine)

// The allocations the workspaces make before the reported step.
[[nodiscard]] std::vector<graph::MemEffect> blas_workspaces(const config::GpuSpec& gpu);

}  // namespace shardsim::report
