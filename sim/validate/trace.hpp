// What `shardsim compare` compares: per rank, the activities of one or more training steps, each
// with its class (compute or which collective) and lane (stream). A shardsim-timeline (simulated
// or replayed) gives one activity per op with the op's id; a PyTorch profiler (Kineto) trace
// gives one per GPU kernel, without ids.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "graph/timeline_io.hpp"

namespace shardsim::validate {

enum class ActivityClass { compute, all_gather, reduce_scatter, all_reduce, other_comm };
inline constexpr int kActivityClasses = 5;

[[nodiscard]] std::string_view to_string(ActivityClass c);
[[nodiscard]] inline bool is_comm(ActivityClass c) {
  return c != ActivityClass::compute;
}

struct Activity {
  int op = -1;       // op id in the graph; -1 when the source has none (Kineto)
  std::string name;  // op name, or kernel name
  std::string kind;  // op kind ("forward", "all_gather", ...); for kernels "gemm", "attention", "other" or the collective
  ActivityClass cls = ActivityClass::compute;
  std::string lane;  // stream
  int step = 0;
  double start = 0;  // seconds
  double end = 0;
};

struct Trace {
  std::string label;        // the file, for reports
  std::string origin;       // "simulated (simgrid)", "measured (nccl, NVIDIA H200)", "PyTorch profiler (Kineto)"
  bool has_op_ids = false;  // activities carry graph op ids (shardsim timelines)
  int steps = 1;            // training steps covered
  int first_rank = 0;       // rank of ranks[0]
  std::vector<std::vector<Activity>> ranks;
};

// Activities of a shardsim timeline: every op that ran, except cpu_wait (host-side, no duration).
[[nodiscard]] Trace trace_from_timeline(const graph::TimelineFile& t, const std::string& label);

// Reads a shardsim-timeline or a Kineto/Chrome trace, telling them apart by their content.
// Throws ConfigError for unreadable or malformed files.
[[nodiscard]] Trace load_trace(const std::filesystem::path& file);

}  // namespace shardsim::validate
