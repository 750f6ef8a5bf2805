// When the CPU thread issues each op of one rank, worked out from the simulated GPU timeline.
//
// PyTorch's CPU thread issues ops in program order (the graph's op ids) and runs ahead of the
// GPU until it blocks, which it does in two ways:
// - on an event (cpu_wait ops: FSDP1's rate limiter, ZeRO-3's fetch and reduce waits), until the
//   GPU has run it;
// - on a full launch queue: with `launch_queue` kernels pending, the next launch waits until the
//   GPU finishes one. Each op counts its kernels (a collective or copy at least one); its
//   kernels are taken to finish at the op's end, a slight overestimate of the wait.
// Each kernel also costs the CPU host.kernel_dispatch seconds (0 by default) and each op its own
// CPU work (op.cpu_s: FSDP's hooks), as in the engine, which starts no op before the CPU issued
// it. An op is never issued after the GPU started it: the engine does not model the launch
// queue, so where that rule says the CPU would be late, the GPU start wins.
//
// The caching allocator hands out blocks at CPU time; report/metrics.cpp uses these times for the
// allocations marked at_issue (FSDP1's unsharded flat parameters, freed with record_stream).
#pragma once

#include <vector>

#include "graph/step_graph.hpp"
#include "graph/timeline.hpp"

namespace shardsim::report {

// What bounds the CPU: gpu.launch_queue and host.kernel_dispatch.
struct IssueRules {
  IssueRules(int queue = 1024, double dispatch = 0) : launch_queue(queue), kernel_dispatch(dispatch) {}  // NOLINT: an int is a queue
  int launch_queue;
  double kernel_dispatch;  // CPU seconds per kernel launched
};

// Issue time of every op on `rank`, indexed by op id (-1 for ops that did not run there).
[[nodiscard]] std::vector<double> cpu_issue_times(const graph::StepGraph& g, const graph::Timeline& t, int rank, const IssueRules& rules);

}  // namespace shardsim::report
