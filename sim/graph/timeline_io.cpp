#include "graph/timeline_io.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <stdexcept>

#include "core/error.hpp"
#include "core/json_text.hpp"

namespace shardsim::graph {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& source, const std::string& key, const std::string& message) {
  throw ConfigError(Location{source, 0, 0}, key, message);
}

const json& field(const json& obj, const char* key, const std::string& path, const std::string& source) {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(source, path.empty() ? key : path + "." + key, "missing required key");
  return *it;
}

template <class E, int N>
E enum_field(const json& obj, const char* key, const std::string& path, const std::string& source) {
  const json& v = field(obj, key, path, source);
  std::vector<std::string> names;
  for (int i = 0; i < N; ++i) {
    const auto e = static_cast<E>(i);
    names.emplace_back(graph::to_string(e));
    if (v.is_string() && v.get<std::string>() == names.back()) return e;
  }
  fail(source, path + "." + key, fmt::format("expected one of {}; got {}", fmt::join(names, ", "), v.dump()));
}

int int_field(const json& obj, const char* key, const std::string& path, const std::string& source) {
  const json& v = field(obj, key, path, source);
  // Checked, never wrapped: 2^63 is an integer to nlohmann but no int.
  return static_cast<int>(JsonFields(source).integer(v, path.empty() ? key : path + "." + key, std::numeric_limits<int>::min(),
                                                     std::numeric_limits<int>::max()));
}

std::string string_field(const json& obj, const char* key, const std::string& path, const std::string& source) {
  const json& v = field(obj, key, path, source);
  if (!v.is_string()) fail(source, path.empty() ? key : path + "." + key, fmt::format("expected a string; got {}", v.dump()));
  return v.get<std::string>();
}

// One op's start or end times on the given ranks of `t`, as a JSON array: null where it did not run.
void append_times(std::string& out, const graph::Timeline& t, int op, const std::vector<int>& ranks, bool start) {
  out += '[';
  for (std::size_t c = 0; c < ranks.size(); ++c) {
    if (c > 0) out += ',';
    const graph::Interval& i = t.at(op, ranks[c]);
    const double v = start ? i.start : i.end;
    if (v < 0) {
      out += "null";
    } else {
      append_json_number(out, v);
    }
  }
  out += ']';
}

std::string json_text(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

// The file's text, handed to `write` in pieces of about a megabyte, keys in the order nlohmann
// writes them: a long pipelined step's timeline is gigabytes (P7's 462B: 1.8 GB), and its
// document in memory ten times that. `op_of(i)` gives the i-th op's TimelineOp fields; the times
// are those of `t`'s ranks `columns`, stored as the ranks `ids`.
template <class OpOf>
void write_timeline_text(const TimelineMeta& meta, const std::string& scenario, int world_size, int steps, std::size_t ops,
                         const OpOf& op_of, const graph::Timeline& t, const std::vector<int>& columns, const std::vector<int>& ids,
                         const TextWriter& write) {
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  std::string out = fmt::format(R"({{"backend":{},"device":{},"format":"shardsim-timeline","format_version":{},"ops":[)",
                                json_text(meta.backend), json_text(meta.device), kTimelineFormatVersion);
  for (std::size_t o = 0; o < ops; ++o) {
    const TimelineOp op = op_of(o);
    if (o > 0) out += ',';
    out += R"({"end":)";
    append_times(out, t, op.id, columns, false);
    fmt::format_to(std::back_inserter(out), R"(,"id":{},"kind":{},"micro":{},"name":{},"start":)", op.id,
                   json_text(graph::to_string(op.kind)), op.micro, json_text(op.name));
    append_times(out, t, op.id, columns, true);
    fmt::format_to(std::back_inserter(out), R"(,"step":{},"stream":{}}})", op.step, json_text(graph::to_string(op.stream)));
    if (out.size() >= kPiece) {
      write(out);
      out.clear();
    }
  }
  fmt::format_to(std::back_inserter(out),
                 R"(],"rank_ids":[{}],"ranks":{},"scenario":{},"source":{},"steps":{},"time_unit":"s","world_size":{}}})",
                 fmt::join(ids, ","), ids.size(), json_text(scenario), json_text(meta.source), steps, world_size);
  write(out);
}

}  // namespace

std::vector<int> ranks_to_show(const graph::StepGraph& g, const graph::Timeline& t, int max_ranks) {
  std::vector<int> shown;
  const int pp = std::max(1, g.info.pp_group);
  const int per_stage = std::max(1, g.info.world_size / pp);
  const int limit = std::max(max_ranks, pp);
  for (int st = 0; st < pp; ++st) {
    for (int i = 0; i < std::max(1, max_ranks / pp) && i < per_stage; ++i) {
      if (const int r = st * per_stage + i; r < t.world() && static_cast<int>(shown.size()) < limit) shown.push_back(r);
    }
  }
  return shown;
}

TimelineFile make_timeline_file(const graph::StepGraph& g, const graph::Timeline& t, TimelineMeta meta, const std::vector<int>& ranks) {
  TimelineFile f;
  f.meta = std::move(meta);
  f.scenario = g.info.scenario;
  f.world_size = g.info.world_size;
  f.steps = g.info.steps;
  for (const int r : ranks) {
    if (r < 0 || r >= t.world()) throw std::logic_error(fmt::format("make_timeline_file: rank {} of a timeline of {} ranks", r, t.world()));
  }
  f.ranks = ranks;
  const int n = static_cast<int>(ranks.size());
  f.timeline = graph::Timeline(g.size(), n);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const graph::Op& op = g.op(static_cast<int>(i));
    f.ops.push_back(TimelineOp{op.id, op.name, op.kind, op.stream, op.step, op.micro});
    for (int c = 0; c < n; ++c) f.timeline.at(op.id, c) = t.at(op.id, ranks[static_cast<std::size_t>(c)]);
  }
  return f;
}

void write_timeline(const graph::StepGraph& g, const graph::Timeline& t, const TimelineMeta& meta, const std::vector<int>& ranks,
                    const TextWriter& write) {
  const auto op_of = [&](std::size_t i) {
    const graph::Op& op = g.op(static_cast<int>(i));
    return TimelineOp{op.id, op.name, op.kind, op.stream, op.step, op.micro};
  };
  write_timeline_text(meta, g.info.scenario, g.info.world_size, g.info.steps, g.size(), op_of, t, ranks, ranks, write);
}

std::string timeline_text(const TimelineFile& f) {
  std::vector<int> columns(static_cast<std::size_t>(f.timeline.world()));
  for (std::size_t c = 0; c < columns.size(); ++c) columns[c] = static_cast<int>(c);
  std::string out;
  write_timeline_text(
      f.meta, f.scenario, f.world_size, f.steps, f.ops.size(), [&](std::size_t i) { return f.ops[i]; }, f.timeline, columns,
      f.ranks.empty() ? columns : f.ranks, [&](std::string_view piece) { out += piece; });
  return out;
}

json to_json(const TimelineFile& f) {
  return json::parse(timeline_text(f));
}

TimelineFile timeline_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "", "expected a JSON object (a shardsim-timeline)");
  if (string_field(j, "format", "", source) != "shardsim-timeline") {
    fail(source, "format", fmt::format("expected \"shardsim-timeline\"; got {}", j.at("format").dump()));
  }
  const int version = int_field(j, "format_version", "", source);
  if (version < 1 || version > kTimelineFormatVersion) {
    fail(source, "format_version", fmt::format("expected 1..{}; got {} (written by a newer shardsim?)", kTimelineFormatVersion, version));
  }
  TimelineFile f;
  f.meta.source = string_field(j, "source", "", source);
  f.meta.backend = string_field(j, "backend", "", source);
  f.meta.device = j.contains("device") && j["device"].is_string() ? j["device"].get<std::string>() : "";
  f.scenario = string_field(j, "scenario", "", source);
  f.world_size = int_field(j, "world_size", "", source);
  f.steps = int_field(j, "steps", "", source);
  const int ranks = int_field(j, "ranks", "", source);
  if (f.world_size < 1) fail(source, "world_size", fmt::format("expected an integer >= 1; got {}", f.world_size));
  if (ranks < 1 || ranks > f.world_size) fail(source, "ranks", fmt::format("expected 1..world_size ({}); got {}", f.world_size, ranks));
  if (f.steps < 1) fail(source, "steps", fmt::format("expected an integer >= 1; got {}", f.steps));
  // Version 1 stored the first `ranks` ranks; version 2 names them.
  if (version == 1) {
    for (int r = 0; r < ranks; ++r) f.ranks.push_back(r);
  } else {
    const json& ids = field(j, "rank_ids", "", source);
    if (!ids.is_array() || ids.size() != static_cast<std::size_t>(ranks)) {
      fail(source, "rank_ids", fmt::format("expected an array of {} ranks (one per stored rank, as \"ranks\" says)", ranks));
    }
    for (std::size_t c = 0; c < ids.size(); ++c) {
      const std::string path = fmt::format("rank_ids[{}]", c);
      const int r = static_cast<int>(JsonFields(source).integer(ids[c], path, 0, f.world_size - 1));
      if (!f.ranks.empty() && r <= f.ranks.back()) {
        fail(source, path, fmt::format("expected ranks in ascending order, each once; got {} after {}", r, f.ranks.back()));
      }
      f.ranks.push_back(r);
    }
  }
  const json& ops = field(j, "ops", "", source);
  if (!ops.is_array()) fail(source, "ops", "expected an array of ops");
  if (ops.empty()) fail(source, "ops", "no ops; expected the timeline of a step (shardsim run --out DIR, or shardsim-replay)");
  f.timeline = graph::Timeline(ops.size(), ranks);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const json& o = ops[i];
    const std::string path = fmt::format("ops[{}]", i);
    if (!o.is_object()) fail(source, path, "expected an object");
    TimelineOp op;
    op.id = int_field(o, "id", path, source);
    if (op.id != static_cast<int>(i)) fail(source, path + ".id", fmt::format("expected {} (ops are listed by id); got {}", i, op.id));
    op.name = string_field(o, "name", path, source);
    op.kind = enum_field<graph::OpKind, graph::kOpKinds>(o, "kind", path, source);
    op.stream = enum_field<graph::Stream, graph::kStreams>(o, "stream", path, source);
    op.step = int_field(o, "step", path, source);
    op.micro = int_field(o, "micro", path, source);
    const json& start = field(o, "start", path, source);
    const json& end = field(o, "end", path, source);
    for (const auto& [a, name] : {std::pair{&start, "start"}, std::pair{&end, "end"}}) {
      if (!a->is_array() || a->size() != static_cast<std::size_t>(ranks)) {
        fail(source, fmt::format("{}.{}", path, name), fmt::format("expected an array of {} times (one per rank) or nulls", ranks));
      }
    }
    for (int r = 0; r < ranks; ++r) {
      const json& s = start[static_cast<std::size_t>(r)];
      const json& e = end[static_cast<std::size_t>(r)];
      if (s.is_null() != e.is_null() || (!s.is_null() && (!s.is_number() || !e.is_number()))) {
        fail(source, fmt::format("{}.start[{}]", path, r), "expected start and end both numbers (seconds) or both null");
      }
      if (s.is_null()) continue;
      const double sv = s.get<double>();
      const double ev = e.get<double>();
      if (!(sv >= 0) || !(ev >= sv)) {
        fail(source, fmt::format("{}.end[{}]", path, r), fmt::format("expected 0 <= start <= end; got start {} and end {}", sv, ev));
      }
      f.timeline.at(op.id, r) = graph::Interval{sv, ev};
    }
    f.ops.push_back(std::move(op));
  }
  return f;
}

}  // namespace shardsim::graph
