// PyTorch profiler (Kineto) traces as a Trace: every GPU op (kernels; memcpy and memset count as
// compute) becomes an activity on its stream, in the step whose window holds its start
// (kineto_steps.hpp).
//
// Classification, arguments first: a kernel with PyTorch's collective arguments ("Collective
// name", "In msg nelems", "Out msg nelems", "dtype", "Group size", "Process Group Name" /
// "Description" / "Ranks") is that collective, of S bytes in that process group. Names second,
// for kernels without arguments: NCCL's and RCCL's kernels (ncclDevKernel_AllGather_RING_LL,
// ncclKernel_ReduceScatter_..., ncclDevKernel_Generic, which says nothing of the collective) are
// communication; the rest is compute, kinded "gemm" (gemm, cutlass, xmma, nvjet, cublas, Cijk_
// (rocBLAS/hipBLASLt), igemm (MIOpen), ...), "attention" (flash, fmha, attention) or "other".
#pragma once

#include <string>
#include <string_view>

#include "validate/kineto_events.hpp"
#include "validate/kineto_steps.hpp"
#include "validate/trace.hpp"

namespace shardsim::validate {

// The class and kind of a kernel from its name ("ncclDevKernel_AllGather_RING_LL" -> all_gather).
struct KernelClass {
  ActivityClass cls;
  std::string kind;
};
[[nodiscard]] KernelClass classify_kernel(std::string_view name);

// The collective PyTorch's arguments describe; `cls` other_comm for an unknown "Collective name".
[[nodiscard]] Collective collective_from_args(const CommArgs& args);

// Bytes per element of a PyTorch dtype name as recorded ("Float" 4, "BFloat16" 2, ...); 0 unknown.
[[nodiscard]] int dtype_bytes(std::string_view dtype);

// Adds one rank's trace to `into`: its steps (found, then filtered), its GPU ops inside the steps
// kept, with times in seconds on the trace's clock. Throws ConfigError naming the file if the
// trace has no GPU ops, or if no step is left after filtering.
void add_kineto_rank(Trace& into, const KinetoEvents& events, int rank, const StepFilter& filter);

}  // namespace shardsim::validate
