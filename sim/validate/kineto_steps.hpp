// Where the training steps of a Kineto trace are on its GPU timeline. In order of preference:
//
//  1. ProfilerStep#N annotations on the GPU (cat gpu_user_annotation; recent PyTorch writes them
//     beside the CPU ones, sometimes one per stream): merged by N, so that each step counts once.
//     A step runs from its annotation's start to the next step's start (the step period, idle
//     time included); a last step, or one followed by a gap in the numbering, ends with its
//     annotation.
//  2. ProfilerStep#N on the CPU only: each step's GPU work is what its CPU range launched (by
//     correlation id); a step runs from its first GPU op to the next step's first GPU op, and a
//     last one for its CPU duration (or to its last GPU op, if later).
//  3. No ProfilerStep: optimizer steps (Optimizer.step#...), a step ending where its optimizer's
//     GPU work ends; step 1 starts at the trace's first GPU op.
//  4. Neither: a kernel sequence that repeats on the busiest stream; steps start at the kernel
//     of the sequence that follows the longest idle time, and only whole repetitions count.
// Otherwise find_steps() throws a ConfigError saying how to profile steps.
#pragma once

#include <string>
#include <vector>

#include "validate/kineto_events.hpp"

namespace shardsim::validate {

struct StepWindow {
  int number = 0;    // N of ProfilerStep#N; 1, 2, ... for steps found otherwise
  double start = 0;  // microseconds, on the trace's clock
  double end = 0;
  double cpu_span = -1;  // the CPU annotation's duration (microseconds), -1 without one
};

struct StepSplit {
  std::vector<StepWindow> steps;   // by start
  std::string method;              // how the steps were found, for the report
  std::vector<std::string> notes;  // what the user should know (a partial first step, ops left out)
};

// Throws ConfigError naming the trace when no step can be found.
[[nodiscard]] StepSplit find_steps(const KinetoEvents& ev);

// Method 4 alone (tests): the smallest period p >= 2 at which `sequence` repeats with at most 2%
// mismatches, 0 if none repeats at least twice.
[[nodiscard]] std::size_t repeating_period(const std::vector<int>& sequence);

}  // namespace shardsim::validate
