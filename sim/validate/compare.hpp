// `shardsim compare SIMULATED MEASURED`: the figures of one step of one rank in two traces
// (trace.hpp), side by side. Step time; busy time per op kind (per class -- compute, all-gather,
// reduce-scatter, all-reduce -- when one side is a Kineto trace without op ids); exposed
// communication (a collective running while no compute runs) and overlap (the share of
// communication time hidden under compute). When both sides are shardsim timelines of the same
// graph, ops are aligned by id: the time-weighted duration error, start offsets and the ops that
// differ most. Errors are (simulated - measured) / measured.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "validate/trace.hpp"

namespace shardsim::validate {

struct StepMetrics {
  double window_start = 0;  // seconds; the compared step within the trace
  double window_end = 0;
  double step_time = 0;  // a Kineto trace of k profiler steps: its span / k
  double compute_busy = 0;
  double comm_busy = 0;
  double exposed_comm = 0;
  double overlap = 0;                          // 1 - exposed / comm busy (1 when there is no communication)
  std::map<std::string, double> busy_by_kind;  // sum of durations
  std::map<std::string, int> count_by_kind;
};

// Metrics of rank index `rank` (0-based into trace.ranks). With `by_class`, kinds are the
// activity classes instead of op kinds.
[[nodiscard]] StepMetrics step_metrics(const Trace& t, std::size_t rank, bool by_class);

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

struct Comparison {
  std::string simulated_label, measured_label, simulated_origin, measured_origin;
  int rank = 0;
  int step = 0;  // 0-based, of the simulated trace
  bool by_op_id = false;
  StepMetrics simulated;
  StepMetrics measured;
  std::vector<KindRow> kinds;
  // By op id only:
  int ops_compared = 0;
  double op_time_error = 0;      // sum |d_sim - d_meas| / sum d_meas over the step's ops
  double mean_start_offset = 0;  // mean |start_sim - start_meas|, each from its step's start
  std::vector<OpRow> largest;    // the ops whose durations differ most
};

// `rank`: the rank compared (a Kineto trace holds one rank and is compared as it is). Throws
// ConfigError if the rank is not in a trace, or if two shardsim timelines come from different graphs.
[[nodiscard]] Comparison compare(const Trace& simulated, const Trace& measured, int rank);

[[nodiscard]] std::string comparison_text(const Comparison& c);
[[nodiscard]] nlohmann::json comparison_json(const Comparison& c);
// The two timelines of the compared rank and step one above the other, on one time axis.
[[nodiscard]] std::string comparison_svg(const Trace& simulated, const Trace& measured, const Comparison& c);

}  // namespace shardsim::validate
