// `shardsim compare SIMULATED MEASURED...`: the figures of one rank in two traces (trace.hpp)
// side by side, and what the measured run says on its own.
//
// The simulated side is the last step of its graph. The measured side is the mean over the
// steps kept (step_metrics.hpp), with the spread of step times; one step of it, the one whose
// time is closest to the median unless `step` names another, is drawn beside the simulated
// step (SVG). Busy time per op kind; per class (compute, all-gather, ...) when one side is a
// profiler trace without op ids. When both sides are shardsim timelines of the same graph, ops
// are aligned by id: the time-weighted duration error, start offsets and the ops that differ
// most. Errors are (simulated - measured) / measured.
//
// From a profiler trace alone: the compute split (GEMM / attention / other kernels), the
// communication per process group and per size with measured and modelled bandwidth
// (comm_table.hpp), idle gaps, figures per rank and stragglers when several ranks are read.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "validate/comm_table.hpp"
#include "validate/step_metrics.hpp"
#include "validate/trace.hpp"

namespace shardsim::validate {

struct KindRow {
  std::string kind;
  double simulated = 0;
  double measured = 0;
  int simulated_count = 0;
  int measured_count = 0;
};

struct OpRow {
  int op = 0;
  std::string name;
  std::string kind;
  double simulated = 0;  // duration, seconds
  double measured = 0;
};

// One rank of the measured trace.
struct RankRow {
  int rank = 0;
  Spread step_time;
  StepMetrics mean;
};

// A figure where the two sides differ, for "where they differ most".
struct Difference {
  std::string what;
  double simulated = 0;  // seconds per step
  double measured = 0;
};

struct Comparison {
  std::string simulated_label, measured_label, simulated_origin, measured_origin;
  int rank = 0;
  int step = 0;             // 0-based, of the simulated trace
  int simulated_steps = 1;  // steps averaged on the simulated side (a profiler trace given as SIMULATED: all kept)
  bool by_op_id = false;
  StepMetrics simulated;  // the simulated step
  StepMetrics measured;   // mean over the measured steps kept
  std::vector<KindRow> kinds;
  // By op id only:
  int ops_compared = 0;
  double op_time_error = 0;      // sum |d_sim - d_meas| / sum d_meas over the step's ops
  double mean_start_offset = 0;  // mean |start_sim - start_meas|, each from its step's start
  std::vector<OpRow> largest;    // the ops whose durations differ most

  // The measured trace on its own:
  std::string steps_from;
  std::vector<std::string> notes;
  bool rank_recorded = true;
  std::vector<StepMetrics> measured_steps;  // every step kept, of the rank compared
  Spread measured_step_time;
  std::size_t drawn = 0;  // index into measured_steps of the step drawn
  std::vector<RankRow> ranks;
  std::vector<GroupRow> groups;
  std::vector<SizeRow> sizes;
  StragglerReport stragglers;
  std::vector<Difference> differences;  // largest |simulated - measured| first
};

struct CompareOptions {
  int rank = 0;                 // the rank compared (a rank both traces hold)
  std::optional<int> step;      // the measured step drawn (its number); default: the median one
  CollectivePredictor predict;  // may be empty: no modelled bandwidth
};

// Throws ConfigError if the rank is not in a trace, if the step is not among those kept, or if
// two shardsim timelines come from different graphs.
[[nodiscard]] Comparison compare(const Trace& simulated, const Trace& measured, const CompareOptions& options);
[[nodiscard]] Comparison compare(const Trace& simulated, const Trace& measured, int rank);

[[nodiscard]] std::string comparison_text(const Comparison& c);
[[nodiscard]] nlohmann::json comparison_json(const Comparison& c);
// The two timelines of the compared rank, the simulated step above the measured step drawn, on
// one time axis from each step's start.
[[nodiscard]] std::string comparison_svg(const Trace& simulated, const Trace& measured, const Comparison& c);

}  // namespace shardsim::validate
