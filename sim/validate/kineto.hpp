// PyTorch profiler traces (torch.profiler's export_chrome_trace, Kineto's JSON) of real FSDP runs,
// as a Trace: every GPU kernel (cat "kernel"; memcpy/memset count as compute) becomes an
// activity on its CUDA stream. NCCL kernels (ncclDevKernel_AllGather_RING_LL, ncclKernel_
// ReduceScatter_..., ...) are communication, classed by collective; the rest is compute, kinded
// "gemm" (gemm, cutlass, xmma, nvjet, cublas), "attention" (flash, fmha, attention) or "other".
// A trace that covers k "ProfilerStep#" annotations counts as k steps.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "validate/trace.hpp"

namespace shardsim::validate {

// True if `j` looks like a Chrome trace ({"traceEvents": [...]}).
[[nodiscard]] bool is_chrome_trace(const nlohmann::json& j);

// Throws ConfigError naming `source` if the trace has no GPU kernels.
[[nodiscard]] Trace trace_from_kineto(const nlohmann::json& j, const std::string& source);

// The class and kind of a kernel from its name ("ncclDevKernel_AllGather_RING_LL" -> all_gather).
struct KernelClass {
  ActivityClass cls;
  std::string kind;
};
[[nodiscard]] KernelClass classify_kernel(std::string_view name);

}  // namespace shardsim::validate
