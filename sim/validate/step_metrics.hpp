// The figures of one step of one rank (trace.hpp), and their spread over steps:
//  - step time: the step's window (kineto_steps.hpp for how profiler traces place it);
//  - busy time: the union of the intervals of compute ops, of communication ops;
//  - exposed communication: time some collective runs while no compute does;
//  - overlap: the share of communication time hidden under compute (1 without communication);
//  - idle: time no GPU op runs at all (the GPU waits for the CPU: data loading, launch overhead,
//    Python), with the longest idle gaps;
//  - busy time and op count per kind (op kind, or kernel kind: gemm, attention, other, memcpy,
//    memset, and the collectives) and per class (compute and each collective).
// Ops are clipped to the window; busy times by kind are sums of durations (ops of one kind may
// overlap on several streams).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "validate/trace.hpp"

namespace shardsim::validate {

struct IdleGap {
  double start = 0;   // seconds from the step's start
  double length = 0;  // seconds
};

struct StepMetrics {
  int number = 0;  // the step's number (ProfilerStep#N, or 1, 2, ...)
  double window_start = 0;
  double window_end = 0;
  double step_time = 0;
  double compute_busy = 0;
  double comm_busy = 0;
  double exposed_comm = 0;
  double overlap = 1;
  double idle = 0;
  std::vector<IdleGap> longest_gaps;  // at most 3, longest first
  std::map<std::string, double> busy_by_kind;
  std::map<std::string, int> count_by_kind;
  std::map<std::string, double> busy_by_class;
  std::map<std::string, int> count_by_class;
};

// Metrics of step index `step` (into ranks[rank].steps) of rank index `rank` (into t.ranks).
[[nodiscard]] StepMetrics step_metrics(const Trace& t, std::size_t rank, std::size_t step);

// Every kept step of a rank.
[[nodiscard]] std::vector<StepMetrics> rank_step_metrics(const Trace& t, std::size_t rank);

// The mean of each figure over steps (counts rounded to the nearest integer; idle gaps of the
// step closest to the mean step time). Requires at least one step.
[[nodiscard]] StepMetrics mean_metrics(const std::vector<StepMetrics>& steps);

struct Spread {
  int n = 0;
  double mean = 0;
  double median = 0;
  double min = 0;
  double max = 0;
  double stdev = 0;  // sample standard deviation (0 for one value)
};
[[nodiscard]] Spread spread(const std::vector<double>& values);

}  // namespace shardsim::validate
