// GEMM and attention timings out of a real PyTorch profiler trace, as samples `shardsim
// calibrate` fits (bench_data.hpp): each kernel's duration with the shapes of the CPU operator
// that launched it. The trace must record shapes (torch.profiler.profile(record_shapes=True)).
//
// Which operator launched a kernel: the kernel's correlation id names its runtime launch
// (cudaLaunchKernel, hipLaunchKernel, cuLaunchKernel, ...), whose thread and time lie inside the
// innermost operator below that launched it. Every GPU op a GEMM or attention operator launches
// counts toward its time (a split-K GEMM's reduction kernel, flash backward's dq conversion).
//
// Operators read (argument positions from PyTorch's native_functions.yaml):
//   aten::mm(a [M,K], b [K,N]); aten::addmm / aten::_addmm_activation(bias, a [M,K], b [K,N]);
//   aten::bmm(a [B,M,K], b [B,K,N]); aten::baddbmm(bias, a [B,M,K], b [B,K,N])
//       -> GemmSample{m, n, k, batch}
//   aten::_scaled_dot_product_{flash,efficient,cudnn}_attention(q [B,H,S,D], k, v, ...) and their
//   _backward (grad_out, q, k, v, ...); aten::_flash_attention_forward / _backward, which take
//   q as [B,S,H,D]   -> AttentionSample{batch, seq, heads, kv_heads (k's), head_dim, causal}
// with is_causal read from "Concrete Inputs" at the operator's position for it. Left out, each
// with a note saying how many: operators in a dtype other than bf16 / fp16 (the simulator's
// GEMMs and attention are bf16), attention whose is_causal is not recorded or whose query and key
// lengths differ, operators without shapes, and operators that launched no GPU work.
#pragma once

#include <string>
#include <vector>

#include "validate/bench_data.hpp"
#include "validate/kineto_events.hpp"

namespace shardsim::validate {

struct KernelSamples {
  BenchResults bench;              // gemms and attention only; backend "trace"
  std::vector<std::string> notes;  // what was left out, and why
};

// The samples of one rank's trace. Throws ConfigError naming the file when the trace holds no
// GEMM or attention operator with shapes, or none in bf16 / fp16.
[[nodiscard]] KernelSamples kernel_samples(const KinetoEvents& events);

}  // namespace shardsim::validate
