// What `shardsim compare` compares: per rank, the activities of some training steps, each with
// its class (compute or which collective), kind and lane (stream), and each step's window on
// that rank's timeline. A shardsim timeline (simulated or replayed) gives one activity per op
// with the op's id; PyTorch profiler (Kineto) traces give one per GPU op, without ids, and one
// rank per file (several files, or a directory of them, make a multi-rank trace).
//
// Names, kinds and lanes are interned: a real trace holds millions of kernels whose names run to
// hundreds of characters, and memory must follow the events kept, not their text.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/timeline_io.hpp"

namespace shardsim::validate {

enum class ActivityClass { compute, all_gather, reduce_scatter, all_reduce, all_to_all, send_recv, other_comm };
inline constexpr int kActivityClasses = 7;

[[nodiscard]] std::string_view to_string(ActivityClass c);
// The graph's collective of that class: all-gather, reduce-scatter, all-reduce (nullopt for the rest,
// which the simulator's step graphs do not have).
[[nodiscard]] std::optional<graph::OpKind> collective_kind(ActivityClass c);
[[nodiscard]] inline bool is_comm(ActivityClass c) {
  return c != ActivityClass::compute;
}

// A collective as PyTorch recorded it on its kernel (kernel arguments), or as the op of a graph.
struct Collective {
  ActivityClass cls = ActivityClass::other_comm;
  std::string recorded;  // "Collective name" as recorded ("allreduce", "_allgather_base", ...)
  double bytes = 0;      // total size S (all-gather output, reduce-scatter input, all-reduce buffer); 0: unknown
  std::string dtype;
  int group_size = 0;            // 0: unknown
  std::string group;             // process group: its description, and its name in brackets
  std::vector<int> group_ranks;  // global ranks of the group, where recorded

  friend bool operator==(const Collective&, const Collective&) = default;
};

struct Activity {
  int op = -1;   // op id in the graph; -1 when the source has none (Kineto)
  int name = 0;  // Trace::names
  int kind = 0;  // Trace::kinds: op kind ("forward", "all_gather", ...); for kernels "gemm", "attention", "other" or the collective
  ActivityClass cls = ActivityClass::compute;
  int lane = 0;      // Trace::lanes: the stream
  int step = -1;     // index into the rank's steps; -1 outside every step kept
  int coll = -1;     // Trace::collectives, -1 when not a collective or not recorded
  double start = 0;  // seconds, on the rank's own clock
  double end = 0;
};

struct Step {
  int number = 0;    // ProfilerStep#N's N; for graphs and steps found otherwise 1, 2, ...
  double start = 0;  // seconds
  double end = 0;
  double cpu_span = -1;  // the CPU ProfilerStep's duration, seconds; -1 without one
  [[nodiscard]] double length() const { return end - start; }
};

struct RankTrace {
  int rank = 0;
  std::string file;
  std::vector<Activity> activities;  // by start
  std::vector<Step> steps;           // the steps kept, by start
};

// Which steps to keep (`compare --steps A:B --warmup N`): the first `warmup` steps found are
// dropped, then only steps numbered first..last are kept.
struct StepFilter {
  int warmup = 0;
  std::optional<int> first;
  std::optional<int> last;
};

struct Trace {
  std::string label;               // the file or directory, for reports
  std::string origin;              // "simulated (simgrid)", "measured (nccl, NVIDIA H200)", "PyTorch profiler (Kineto), NVIDIA A100"
  bool has_op_ids = false;         // activities carry graph op ids (shardsim timelines)
  int world_size = 1;              // of the job
  bool ranks_recorded = true;      // false: a Kineto trace without distributedInfo (its rank is assumed)
  std::string steps_from;          // how the steps were found
  std::vector<std::string> notes;  // what the reader should know about this trace
  std::vector<std::string> names, kinds, lanes;
  std::vector<Collective> collectives;
  std::vector<RankTrace> ranks;  // by rank

  [[nodiscard]] int intern_name(std::string_view s) { return intern(names, name_ids_, s); }
  [[nodiscard]] int intern_kind(std::string_view s) { return intern(kinds, kind_ids_, s); }
  [[nodiscard]] int intern_lane(std::string_view s) { return intern(lanes, lane_ids_, s); }
  // The rank's index in `ranks`, or nullopt.
  [[nodiscard]] std::optional<std::size_t> index_of(int rank) const;
  [[nodiscard]] const std::string& kind_of(const Activity& a) const { return kinds[static_cast<std::size_t>(a.kind)]; }
  [[nodiscard]] const std::string& name_of(const Activity& a) const { return names[static_cast<std::size_t>(a.name)]; }
  [[nodiscard]] const std::string& lane_of(const Activity& a) const { return lanes[static_cast<std::size_t>(a.lane)]; }

 private:
  static int intern(std::vector<std::string>& table, std::unordered_map<std::string, int>& ids, std::string_view s);
  std::unordered_map<std::string, int> name_ids_, kind_ids_, lane_ids_;
};

// Activities of a shardsim timeline: every op that ran, except cpu_wait (host-side, no duration).
// Step s runs from the end of step s-1's last op (on any rank) to the end of its own last op.
[[nodiscard]] Trace trace_from_timeline(const graph::TimelineFile& t, const std::string& label);

// What to read: one shardsim timeline, or Kineto traces (files, or directories of per-rank
// traces, .json or .json.gz).
struct TraceRequest {
  std::vector<std::filesystem::path> paths;
  StepFilter steps;
  std::optional<int> rank;  // --rank: must agree with a trace's distributedInfo.rank
};

// Reads a shardsim-timeline or Kineto traces, telling them apart by their content. Throws
// ConfigError naming the file (and line:column for JSON syntax) for unreadable or malformed
// files, ranks that disagree or are missing, and steps that cannot be found or are all filtered out.
[[nodiscard]] Trace load_trace(const TraceRequest& request);
[[nodiscard]] Trace load_trace(const std::filesystem::path& file);

}  // namespace shardsim::validate
