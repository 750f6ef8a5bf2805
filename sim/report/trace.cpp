#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <string>
#include <vector>

#include "core/json_text.hpp"
#include "graph/timeline_io.hpp"
#include "report/exposure.hpp"
#include "report/outputs.hpp"

namespace shardsim::report {

void write_chrome_trace(const graph::StepGraph& g, const graph::Timeline& t, int max_ranks, const IssueRules& rules,
                        const MemoryTimeline* memory, const TextWriter& write) {
  using nlohmann::json;
  // In symmetric mode the timeline holds only the simulated ranks, fewer than the world. With
  // pipeline stages, the first ranks of every stage.
  const std::vector<int> shown = graph::ranks_to_show(g, t, max_ranks);
  const int pp = g.info.pp_group;
  const int ranks = static_cast<int>(shown.size());
  // The events are written as text one by one (a long pipelined step has millions of them: their
  // document in memory took 13 GiB for P7's 462B on 6,144 GPUs).
  std::string out = R"({"displayTimeUnit":"ms","otherData":)";
  out += json{{"scenario", g.info.scenario}, {"world_size", g.info.world_size}, {"ranks_shown", ranks}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
  out += R"(,"traceEvents":[)";
  bool first = true;
  // Before each event: the comma, and what is written so far handed on in pieces of a megabyte.
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  const auto next = [&] {
    if (out.size() >= kPiece) {
      write(out);
      out.clear();
    }
    if (!first) out += ',';
    first = false;
  };
  const auto add = [&](const json& event) {
    next();
    out += event.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  // Every stream the graph uses gets a named track (the first six always, as before).
  std::array<bool, graph::kStreams> used{};
  for (int s = 0; s <= static_cast<int>(graph::Stream::cpu); ++s) used[static_cast<std::size_t>(s)] = true;
  for (std::size_t o = 0; o < g.size(); ++o) used[static_cast<std::size_t>(g.op(static_cast<int>(o)).stream)] = true;
  for (int r : shown) {
    const std::string name = pp > 1 ? fmt::format("rank {} (stage {})", r, g.info.stage_of(r)) : fmt::format("rank {}", r);
    add({{"ph", "M"}, {"name", "process_name"}, {"pid", r}, {"args", {{"name", name}}}});
    add({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    for (int s = 0; s < graph::kStreams; ++s) {
      if (!used[static_cast<std::size_t>(s)]) continue;
      add({{"ph", "M"},
           {"name", "thread_name"},
           {"pid", r},
           {"tid", s},
           {"args", {{"name", std::string(graph::to_string(static_cast<graph::Stream>(s)))}}}});
    }
  }
  for (std::size_t o = 0; o < g.size(); ++o) {
    const graph::Op& op = g.op(static_cast<int>(o));
    json args{{"op", op.id}, {"kind", std::string(graph::to_string(op.kind))}, {"unit", op.unit}, {"step", op.step}, {"micro", op.micro}};
    if (op.is_collective()) {
      args["bytes"] = op.bytes;
      args["group"] = std::string(graph::to_string(op.group));
    } else {
      args["gemm_flops"] = op.work.gemm_flops();
      args["attention_flops"] = op.work.attention_flops(false) + op.work.attention_flops(true);
      args["memory_bytes"] = op.work.memory_bytes;
      if (op.work.column_cast_bytes > 0) args["column_cast_bytes"] = op.work.column_cast_bytes;
    }
    // What every rank's event of this op shares, as text once (keys in the order nlohmann writes
    // them): its args and category, then its name.
    std::string head = R"({"args":)";
    head += args.dump(-1, ' ', false, json::error_handler_t::replace);
    head += R"(,"cat":)";
    append_json_string(head, graph::to_string(op.kind));
    head += R"(,"dur":)";
    std::string name = R"(,"name":)";
    append_json_string(name, op.name);
    name += R"(,"ph":"X","pid":)";
    const std::string tid = fmt::format(R"(,"tid":{},"ts":)", static_cast<int>(op.stream));
    for (int r : shown) {
      if (!op.runs_on_stage(g.info.stage_of(r))) continue;  // another pipeline stage's
      const graph::Interval& i = t.at(op.id, r);
      next();
      out += head;
      append_json_number(out, (i.end - i.start) * 1e6);
      out += name;
      fmt::format_to(std::back_inserter(out), "{}", r);
      out += tid;
      append_json_number(out, i.start * 1e6);
      out += '}';
    }
  }
  // FSDP's hooks on the CPU thread's track: each op's CPU work ends where the CPU starts launching
  // its kernels.
  bool hooks = false;
  for (std::size_t o = 0; o < g.size(); ++o) hooks = hooks || g.op(static_cast<int>(o)).cpu_s > 0;
  if (hooks) {
    for (int r : shown) {
      const std::vector<double> issued = cpu_issue_times(g, t, r, rules);
      for (std::size_t o = 0; o < g.size(); ++o) {
        const graph::Op& op = g.op(static_cast<int>(o));
        if (op.cpu_s <= 0 || issued[o] < 0) continue;
        const double end = issued[o] - rules.kernel_dispatch * op.kernels_launched();
        add({{"ph", "X"},
             {"name", "hooks " + op.name},
             {"cat", "cpu"},
             {"pid", r},
             {"tid", static_cast<int>(graph::Stream::cpu)},
             {"ts", (end - op.cpu_s) * 1e6},
             {"dur", op.cpu_s * 1e6},
             {"args", {{"op", op.id}, {"unit", op.unit}}}});
      }
    }
  }
  // The compute stream's waits for communication (report/exposure.hpp) on a track of their own:
  // each stretch of exposed communication named by the collective the compute stream waited for.
  constexpr int kWaits = graph::kStreams;
  for (int r : shown) {
    add({{"ph", "M"}, {"name", "thread_name"}, {"pid", r}, {"tid", kWaits}, {"args", {{"name", "compute waits for"}}}});
    const int stage = g.info.stage_of(r);
    for (int step = 0; step < g.info.steps; ++step) {
      double from = -1, to = -1;  // the step's ops on this rank
      for (const int id : g.ops_on_stage(stage)) {
        const graph::Op& op = g.op(id);
        const graph::Interval& i = t.at(id, r);
        if (op.step != step || i.start < 0) continue;
        from = from < 0 ? i.start : std::min(from, i.start);
        to = std::max(to, i.end);
      }
      if (from < 0) continue;
      for (const ExposedSpan& w : exposed_comm(g, t, r, step, from, to, true).spans) {
        const std::string dim(to_string(w.dimension));
        add({{"ph", "X"},
             {"name", w.op >= 0 ? "waits for " + g.op(w.op).name : "waits, " + dim + " running"},
             {"cat", "exposed"},
             {"pid", r},
             {"tid", kWaits},
             {"ts", w.start * 1e6},
             {"dur", (w.end - w.start) * 1e6},
             {"args", {{"dimension", dim}, {"op", w.op}}}});
      }
    }
  }
  // The summary's rank's memory as counters (a process of its own if that rank is not shown).
  if (memory != nullptr && !memory->points.empty()) {
    constexpr double GiB = 1024.0 * 1024 * 1024;
    const int r = memory->rank;
    if (std::find(shown.begin(), shown.end(), r) == shown.end()) {
      add({{"ph", "M"}, {"name", "process_name"}, {"pid", r}, {"args", {{"name", fmt::format("rank {}", r)}}}});
    }
    for (const MemoryPoint& p : memory->points) {
      add({{"ph", "C"},
           {"name", "memory (GiB)"},
           {"pid", r},
           {"ts", p.time * 1e6},
           {"args", {{"allocated", p.total() / GiB}, {"reserved", p.reserved / GiB}}}});
      json by{};
      for (int c = 0; c < graph::kMemCategories; ++c) {
        by[std::string(graph::to_string(static_cast<graph::MemCategory>(c)))] = p.bytes[static_cast<std::size_t>(c)] / GiB;
      }
      add({{"ph", "C"}, {"name", "allocated by category (GiB)"}, {"pid", r}, {"ts", p.time * 1e6}, {"args", by}});
    }
  }
  out += "]}";
  write(out);
}

std::string chrome_trace(const graph::StepGraph& g, const graph::Timeline& t, int max_ranks, const IssueRules& rules,
                         const MemoryTimeline* memory) {
  std::string out;
  write_chrome_trace(g, t, max_ranks, rules, memory, [&](std::string_view piece) { out += piece; });
  return out;
}

}  // namespace shardsim::report
