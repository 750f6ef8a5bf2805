// The forms a result is written in: a text summary for the terminal, JSON for scripts, a Chrome
// trace for Perfetto, and the memory timeline as CSV and as an SVG picture.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/atomic_file.hpp"  // TextWriter
#include "graph/timeline.hpp"
#include "report/metrics.hpp"

namespace shardsim::report {

// A table of the headline figures and the memory breakdown at the peak.
[[nodiscard]] std::string summary_text(const Summary& s, const config::ScenarioConfig& scenario);

// The keys DESIGN.md promises for `run --json` (step_time_s, tokens_per_s_per_gpu, tflops_per_gpu,
// mfu, exposed_comm_s, peak_memory_bytes, oom, world_size, memory_breakdown) and a few more.
[[nodiscard]] nlohmann::json summary_json(const Summary& s);

// Chrome trace event format: pid = rank, tid = stream, ts/dur in microseconds, args with the unit,
// bytes and FLOPs. Ranks beyond `max_ranks` are left out (say so in the metadata). The CPU
// thread's track also shows the CPU's own work on ops (FSDP's hooks, op.cpu_s) where the CPU
// issue model (`rules`, report/cpu_issue.hpp) puts it. A `compute waits for` track names what
// each stretch of exposed communication waited for (report/exposure.hpp). With `memory` (the
// summary's rank's), that rank's memory over time as counter tracks: allocated and reserved, and
// allocated by category, in GiB.
[[nodiscard]] std::string chrome_trace(const graph::StepGraph& g, const graph::Timeline& t, int max_ranks, const IssueRules& rules = {},
                                       const MemoryTimeline* memory = nullptr);
// The same text handed to `write` in pieces, never whole in memory (a long pipelined step's is
// most of a gigabyte).
void write_chrome_trace(const graph::StepGraph& g, const graph::Timeline& t, int max_ranks, const IssueRules& rules,
                        const MemoryTimeline* memory, const TextWriter& write);

[[nodiscard]] std::string memory_csv(const MemoryTimeline& m);
[[nodiscard]] std::string memory_svg(const MemoryTimeline& m, double capacity, const std::string& title);

}  // namespace shardsim::report
