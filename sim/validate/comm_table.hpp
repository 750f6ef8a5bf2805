// Communication of a measured trace, from the collectives' kernel arguments (kineto.hpp):
//  - per process group and collective: count, time and bytes per step (FSDP's all-gathers and
//    reduce-scatters, HSDP's all-reduce, TP, PP each have their own group);
//  - per group, collective and size: the mean kernel time, algbw = S / t and busbw = algbw x
//    (n-1)/n (2(n-1)/n for all-reduce, 1 for send/recv), as nccl-tests' PERFORMANCE.md defines
//    them, next to what a collective model predicts for that size (a kernel's time includes any
//    wait for late peers, so a measured busbw below the model's can be a straggler's doing);
//  - stragglers: for each collective matched across ranks (the i-th of a group on each rank), the
//    rank that started it last made the others wait. Ranks' clocks are aligned first by the
//    median difference of the collectives' end times, which NCCL makes nearly simultaneous.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "validate/trace.hpp"

namespace shardsim::validate {

// nccl-tests' bus-bandwidth factor of a collective over n ranks.
[[nodiscard]] double bus_factor(ActivityClass c, int n);

struct GroupRow {
  std::string group;  // "(not recorded)" for kernels without arguments
  ActivityClass cls = ActivityClass::other_comm;
  int group_size = 0;
  double count_per_step = 0;
  double time_per_step = 0;   // seconds, sum of kernel durations
  double bytes_per_step = 0;  // 0 where sizes are not recorded
};

struct SizeRow {
  std::string group;
  ActivityClass cls = ActivityClass::other_comm;
  double bytes = 0;
  std::string dtype;
  int group_size = 0;
  int count = 0;
  double mean_time = 0;  // seconds
  double min_time = 0;
  double algbw = 0;  // bytes/s, from the mean time
  double busbw = 0;
  std::optional<double> predicted;  // seconds, by the collective model
};

// What a collective model predicts for a recorded collective (seconds); nullopt if it cannot.
using CollectivePredictor = std::function<std::optional<double>(const Collective&)>;

[[nodiscard]] std::vector<GroupRow> group_rows(const Trace& t, std::size_t rank);
// Collectives with a known size, largest total time first. `predict` may be empty.
[[nodiscard]] std::vector<SizeRow> size_rows(const Trace& t, std::size_t rank, const CollectivePredictor& predict);

struct StragglerRow {
  int rank = 0;
  double last = 0;          // collectives per step at which it arrived last
  double caused = 0;        // seconds per step the last arrival came after the next-to-last
  double waited = 0;        // seconds per step it waited for the last arrival
  double clock_offset = 0;  // seconds its clock was shifted by to align with the first rank's
};

struct StragglerReport {
  double matched = 0;              // collectives per step matched across ranks
  std::vector<StragglerRow> rows;  // by rank; empty with fewer than two ranks
  std::vector<std::string> notes;  // groups left out and why
};

[[nodiscard]] StragglerReport stragglers(const Trace& t);

}  // namespace shardsim::validate
