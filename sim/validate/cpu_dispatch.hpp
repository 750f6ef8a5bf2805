// The CPU's time per kernel launched, out of a PyTorch profiler (Kineto) trace: what
// host.kernel_dispatch asks for (docs/fsdp.md, "A CPU that cannot keep up").
//
// On each CPU thread that launches GPU work, the time from one launch to the thread's next is
// what the CPU spent issuing that next kernel (Python, the dispatcher, the launch call itself),
// unless the thread was held meanwhile. A gap is left out when
// - a synchronizing call (cudaStreamSynchronize, cudaEventSynchronize, a synchronous
//   cudaMemcpy, ...) lies in it or launched its first op: the thread waited for the GPU;
// - another thread launched in it: the thread handed the work over (the main thread waits in
//   loss.backward() while autograd's thread launches the backward);
// - its first launch call itself took over 100 times the median call (the launch queue was full:
//   the GPU, not the CPU, set the pace).
// The estimate is the mean of the gaps kept: the CPU's seconds over the kernels they issued.
// A trace recorded with stacks or shapes carries the profiler's own cost per op, so it bounds
// the figure from above.
#pragma once

#include <optional>
#include <string>

#include "validate/kineto_events.hpp"

namespace shardsim::validate {

struct DispatchEstimate {
  double per_kernel = 0;  // seconds of CPU per kernel launched
  int gaps = 0;           // launch-to-launch gaps kept
  int left_out = 0;       // gaps left out (the thread was held)
  int threads = 0;        // CPU threads that launched GPU work
};

// Nothing when no thread launched two GPU ops with a gap that could be kept.
[[nodiscard]] std::optional<DispatchEstimate> cpu_dispatch(const KinetoEvents& events);

// "167 us of CPU per kernel launched (3765 launch-to-launch gaps on 2 threads, 7 left out ...)".
[[nodiscard]] std::string describe(const DispatchEstimate& d);

}  // namespace shardsim::validate
