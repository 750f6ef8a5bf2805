// Replays a step graph on one rank: ops are issued in graph order (their ids, PyTorch's CPU issue
// order) onto one stream per graph stream; an edge from another stream becomes a wait on that
// op's end event (cudaStreamWaitEvent); a cpu_wait op blocks issue until its predecessors
// finished, as FSDP1's rate limiter blocks the CPU thread. Every op is bracketed by two events;
// all times are read against a t0 event recorded on the compute stream after a barrier over
// all ranks. Collectives get one communicator per (stream, group), as PyTorch gives each
// process group its own NCCL communicator.
//
//   replay::Backend& b = ...;            // one process per rank
//   const auto times = replay::replay_step(graph, b, watchdog, {});
#pragma once

#include <optional>
#include <vector>

#include "graph/step_graph.hpp"
#include "graph/timeline.hpp"
#include "replay/backend.hpp"
#include "replay/watchdog.hpp"

namespace shardsim::replay {

struct ReplayOptions {
  int warmup = 1;  // unmeasured runs of the step first (cuBLAS heuristics, NCCL connections)
  // A test hook: this rank stops before the measured step and never arrives (a lost peer).
  std::optional<int> stall_rank;
};

// Checks that the graph can be replayed by `b` (world size, edges in issue order). Throws
// ConfigError for a graph that cannot be.
void check_replayable(const graph::StepGraph& g, int world, const std::string& source);

// One rank's measured step.
struct RankTimes {
  std::vector<graph::Interval> ops;  // seconds from this rank's t0; cpu_wait ops take no time
                                     // and sit at the end of their last predecessor
  std::optional<double> t0_clock;    // t0 on the clock all ranks share, if the backend has one

  // [t0_clock or NaN, start0, end0, start1, end1, ...]: what Backend::gather carries.
  [[nodiscard]] std::vector<double> flatten() const;
};

// Runs the step (warm-up runs, then one measured) and returns this rank's times.
[[nodiscard]] RankTimes replay_step(const graph::StepGraph& g, Backend& b, Watchdog& watchdog, const ReplayOptions& options);

// Every rank's flattened RankTimes (Backend::gather) as one timeline of ops x ranks. With a shared
// clock, each rank's times are moved to the earliest rank's t0 (ranks leave the start barrier at
// slightly different moments); without one, each rank's t0 is taken as the same instant.
[[nodiscard]] graph::Timeline merge_ranks(std::size_t ops, int world, std::span<const double> gathered);

}  // namespace shardsim::replay
