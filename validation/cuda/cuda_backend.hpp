// The GPU replay backend: one CUDA stream per graph stream, CUDA events, cuBLAS bf16 GEMMs
// (fp32 accumulation) of the ops' real shapes, device-to-device copies for memory-bound work,
// empty kernels for the remaining launches, and NCCL all-gather / reduce-scatter / all-reduce
// of the ops' sizes on one communicator per (stream, group), split from a world communicator
// whose unique id rank 0 hands out (rendezvous.hpp). This header includes no CUDA header, so the
// tools can name the backend without the CUDA toolkit.
//
// Failures end in RuntimeError with the CUDA / cuBLAS / NCCL error text: out of memory names
// the sizes asked for and free; a communicator that does not form within the timeout (a peer
// never arrived) is aborted rather than waited for.
#pragma once

#include <memory>

#include "replay/backend.hpp"
#include "replay/rank_env.hpp"
#include "replay/rendezvous.hpp"

namespace shardsim::replay {

struct CudaOptions {
  RankEnv env;                // the GPU is env.local_rank
  RendezvousSpec rendezvous;  // and its timeout bounds communicator set-up
};

[[nodiscard]] std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& options);

}  // namespace shardsim::replay
