// The "shardsim-timeline" JSON format: when each op of a step graph ran on each rank. `shardsim
// run --out DIR` writes the simulated one (DIR/timeline.json), `shardsim-replay` the measured one,
// and `shardsim compare` reads both. Schema: docs/timeline-format.md; "format_version" changes
// when it does.
//
//   {"format": "shardsim-timeline", "format_version": 2, "source": "simulated", ..., "rank_ids": [0, 1],
//    "ops": [{"id": 0, "name": "AG root", "kind": "all_gather", "stream": "nccl", "step": 0,
//             "micro": 0, "start": [0.0, 0.0], "end": [1.2e-4, 1.2e-4]}, ...]}
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/atomic_file.hpp"  // TextWriter
#include "graph/step_graph.hpp"
#include "graph/timeline.hpp"

namespace shardsim::graph {

// 2: the stored ranks are named (`rank_ids`); 1 stored the first `ranks` ranks.
inline constexpr int kTimelineFormatVersion = 2;

// What the file says about one op: enough to compare timelines without the graph.
struct TimelineOp {
  int id = 0;
  std::string name;
  graph::OpKind kind = graph::OpKind::forward;
  graph::Stream stream = graph::Stream::compute;
  int step = 0;
  int micro = 0;
};

// Where a timeline comes from.
struct TimelineMeta {
  std::string source = "simulated";  // simulated | measured
  std::string backend = "simgrid";   // simgrid | cpu | nccl
  std::string device;                // e.g. "NVIDIA H200", "cpu (scaled x0.01)"
};

struct TimelineFile {
  TimelineMeta meta;
  std::string scenario;
  int world_size = 1;  // of the job
  int steps = 1;
  std::vector<int> ranks;       // the global rank of each of the timeline's columns, ascending
  std::vector<TimelineOp> ops;  // ops[i].id == i
  graph::Timeline timeline;     // seconds from a common t0; -1 where an op did not run
};

// The ranks a file or trace of `t` shows when it may hold `max_ranks`: without pipeline stages the
// first max_ranks; with them the first ranks of every stage (max_ranks / pp a stage, at least one),
// so that every stage's program is there. Ascending, and only ranks below t.world().
[[nodiscard]] std::vector<int> ranks_to_show(const graph::StepGraph& g, const graph::Timeline& t, int max_ranks);

// The ops of `g` with their times on `ranks` of `t` (ascending, each below t.world()).
[[nodiscard]] TimelineFile make_timeline_file(const graph::StepGraph& g, const graph::Timeline& t, TimelineMeta meta,
                                              const std::vector<int>& ranks);

// The timeline file of `t`'s `ranks` (what make_timeline_file would hold) as text, handed to
// `write` piece by piece without making the file in memory first (run --out).
void write_timeline(const graph::StepGraph& g, const graph::Timeline& t, const TimelineMeta& meta, const std::vector<int>& ranks,
                    const TextWriter& write);

// The file's text (what `run --out` and shardsim-replay write), and the same as a JSON document.
[[nodiscard]] std::string timeline_text(const TimelineFile& f);
[[nodiscard]] nlohmann::json to_json(const TimelineFile& f);

// Reads a timeline written by to_json. Throws ConfigError naming `source` and the key path
// (e.g. "ops[3].end[1]") for malformed input.
[[nodiscard]] TimelineFile timeline_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace shardsim::graph
