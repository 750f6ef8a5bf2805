#include "validate/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/json_text.hpp"
#include "validate/kineto.hpp"
#include "validate/kineto_events.hpp"

namespace shardsim::validate {
namespace {

namespace fs = std::filesystem;

ActivityClass class_of(graph::OpKind k) {
  switch (k) {
    case graph::OpKind::all_gather:
      return ActivityClass::all_gather;
    case graph::OpKind::reduce_scatter:
      return ActivityClass::reduce_scatter;
    case graph::OpKind::all_reduce:
      return ActivityClass::all_reduce;
    default:
      return ActivityClass::compute;
  }
}

bool is_trace_name(const fs::path& p) {
  const std::string n = p.filename().string();
  auto ends = [&](std::string_view s) { return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0; };
  return ends(".json") || ends(".json.gz");
}

// Files named on the command line, directories expanded to their .json / .json.gz files.
struct Inputs {
  std::vector<fs::path> files;
  std::vector<fs::path> directories;
};

Inputs expand(const std::vector<fs::path>& paths) {
  Inputs in;
  for (const fs::path& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      in.files.push_back(p);
      continue;
    }
    in.directories.push_back(p);
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(p, ec)) {
      if (e.is_regular_file(ec) && is_trace_name(e.path())) found.push_back(e.path());
    }
    if (ec) throw ConfigError(Location{p.string(), 0, 0}, "", fmt::format("cannot list the directory: {}", ec.message()));
    if (found.empty()) {
      throw ConfigError(Location{p.string(), 0, 0}, "", "no .json or .json.gz files; expected a directory of per-rank profiler traces");
    }
    std::sort(found.begin(), found.end());
    in.files.insert(in.files.end(), found.begin(), found.end());
  }
  return in;
}

std::string kineto_origin(const KinetoEvents& k) {
  std::string o = "PyTorch profiler (Kineto)";
  if (!k.device.empty()) o += ", " + k.device;
  if (!k.backend.empty()) o += ", " + k.backend;
  return o;
}

[[noreturn]] void not_a_trace(const std::string& file) {
  throw ConfigError(
      Location{file, 0, 0}, "format",
      "expected a shardsim-timeline (\"format\": \"shardsim-timeline\") or a PyTorch profiler trace ({\"traceEvents\": [...]})");
}

// One Kineto trace: its rank from distributedInfo, checked against --rank.
Trace one_kineto_trace(KinetoEvents& k, const TraceRequest& req) {
  Trace t;
  t.label = k.file;
  t.origin = kineto_origin(k);
  int rank = 0;
  if (k.rank) {
    rank = *k.rank;
    if (req.rank && *req.rank != rank) {
      throw ConfigError(Location{k.file, 0, 0}, "distributedInfo.rank",
                        fmt::format("this trace is rank {}'s; --rank {} asks for another rank (give that rank's trace, or --rank {})", rank,
                                    *req.rank, rank));
    }
  } else {
    t.ranks_recorded = false;
    rank = req.rank.value_or(0);
    t.notes.push_back(req.rank ? fmt::format("the trace does not record its rank (no distributedInfo): rank {} as --rank says", rank)
                               : "the trace does not record its rank (no distributedInfo): taken as rank 0");
  }
  t.world_size = k.world_size.value_or(rank + 1);
  add_kineto_rank(t, k, rank, req.steps);
  return t;
}

Trace several_kineto_traces(const Inputs& in, const TraceRequest& req) {
  Trace t;
  t.label = req.paths.size() == 1 ? req.paths.front().string() : fmt::format("{} traces", in.files.size());
  std::map<int, std::string> file_of_rank;
  std::optional<int> world;
  std::string world_file;
  for (const fs::path& f : in.files) {
    ParsedTraceFile parsed = read_trace_file(f);
    if (!parsed.is_kineto) {
      if (parsed.document.is_object() && parsed.document.value("format", "") == "shardsim-timeline") {
        throw ConfigError(
            Location{f.string(), 0, 0}, "format",
            "a shardsim timeline among several files; expected one timeline alone, or PyTorch profiler traces (one per rank)");
      }
      not_a_trace(f.string());
    }
    KinetoEvents& k = parsed.kineto;
    if (!k.rank) {
      throw ConfigError(Location{f.string(), 0, 0}, "distributedInfo.rank",
                        "missing: with several traces each must say its rank; expected per-rank traces of a distributed run "
                        "(torch.profiler writes distributedInfo when torch.distributed is initialised)");
    }
    if (const auto it = file_of_rank.find(*k.rank); it != file_of_rank.end()) {
      throw ConfigError(Location{f.string(), 0, 0}, "distributedInfo.rank",
                        fmt::format("rank {} again (also in {}); expected one trace per rank", *k.rank, it->second));
    }
    if (k.world_size) {
      if (world && *world != *k.world_size) {
        throw ConfigError(Location{f.string(), 0, 0}, "distributedInfo.world_size",
                          fmt::format("{} here, {} in {}; expected traces of one run", *k.world_size, *world, world_file));
      }
      world = k.world_size;
      world_file = f.string();
    }
    file_of_rank.emplace(*k.rank, f.string());
    if (t.origin.empty()) t.origin = kineto_origin(k);
    add_kineto_rank(t, k, *k.rank, req.steps);
  }
  t.world_size = world.value_or(file_of_rank.rbegin()->first + 1);
  if (!in.directories.empty()) {
    std::vector<int> missing;
    for (int r = 0; r < t.world_size; ++r) {
      if (file_of_rank.count(r) == 0) missing.push_back(r);
    }
    if (!missing.empty()) {
      std::string list;
      for (std::size_t i = 0; i < missing.size() && i < 16; ++i) list += fmt::format("{}{}", i == 0 ? "" : ", ", missing[i]);
      if (missing.size() > 16) list += fmt::format(" and {} more", missing.size() - 16);
      throw ConfigError(Location{in.directories.front().string(), 0, 0}, "distributedInfo.rank",
                        fmt::format("ranks {} of {} missing; expected one trace per rank of the run in the directory", list, t.world_size));
    }
  }
  if (req.rank && file_of_rank.count(*req.rank) == 0) {
    throw ConfigError(Location{t.label, 0, 0}, "distributedInfo.rank",
                      fmt::format("--rank {}: no trace of that rank among the {} read (ranks {}..{})", *req.rank, file_of_rank.size(),
                                  file_of_rank.begin()->first, file_of_rank.rbegin()->first));
  }
  std::sort(t.ranks.begin(), t.ranks.end(), [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  return t;
}

}  // namespace

std::optional<graph::OpKind> collective_kind(ActivityClass c) {
  switch (c) {
    case ActivityClass::all_gather:
      return graph::OpKind::all_gather;
    case ActivityClass::reduce_scatter:
      return graph::OpKind::reduce_scatter;
    case ActivityClass::all_reduce:
      return graph::OpKind::all_reduce;
    default:
      return std::nullopt;
  }
}

std::string_view to_string(ActivityClass c) {
  switch (c) {
    case ActivityClass::compute:
      return "compute";
    case ActivityClass::all_gather:
      return "all_gather";
    case ActivityClass::reduce_scatter:
      return "reduce_scatter";
    case ActivityClass::all_reduce:
      return "all_reduce";
    case ActivityClass::all_to_all:
      return "all_to_all";
    case ActivityClass::send_recv:
      return "send_recv";
    case ActivityClass::other_comm:
      return "other_comm";
  }
  return "compute";
}

int Trace::intern(std::vector<std::string>& table, std::unordered_map<std::string, int>& ids, std::string_view s) {
  const std::string key(s);
  const auto it = ids.find(key);
  if (it != ids.end()) return it->second;
  const int id = static_cast<int>(table.size());
  table.push_back(key);
  ids.emplace(key, id);
  return id;
}

std::optional<std::size_t> Trace::index_of(int rank) const {
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].rank == rank) return i;
  }
  return std::nullopt;
}

Trace trace_from_timeline(const graph::TimelineFile& t, const std::string& label) {
  Trace tr;
  tr.label = label;
  tr.origin = t.meta.device.empty() ? fmt::format("{} ({})", t.meta.source, t.meta.backend)
                                    : fmt::format("{} ({}, {})", t.meta.source, t.meta.backend, t.meta.device);
  tr.has_op_ids = true;
  tr.world_size = t.world_size;
  tr.steps_from = "the graph's steps";
  const int world = t.timeline.world();
  tr.ranks.resize(static_cast<std::size_t>(world));
  // Step s ends with its last op on any rank and starts where step s-1 ended.
  std::vector<double> step_end(static_cast<std::size_t>(std::max(1, t.steps)), 0.0);
  for (const auto& op : t.ops) {
    if (op.kind == graph::OpKind::cpu_wait || op.step < 0 || op.step >= t.steps) continue;
    for (int r = 0; r < world; ++r) {
      const graph::Interval& i = t.timeline.at(op.id, r);
      if (i.start >= 0) step_end[static_cast<std::size_t>(op.step)] = std::max(step_end[static_cast<std::size_t>(op.step)], i.end);
    }
  }
  for (int r = 0; r < world; ++r) {
    RankTrace& rt = tr.ranks[static_cast<std::size_t>(r)];
    rt.rank = t.ranks.empty() ? r : t.ranks[static_cast<std::size_t>(r)];
    rt.file = label;
    for (int s = 0; s < t.steps; ++s) {
      rt.steps.push_back(Step{s + 1, s == 0 ? 0.0 : step_end[static_cast<std::size_t>(s - 1)], step_end[static_cast<std::size_t>(s)], -1});
    }
  }
  for (const auto& op : t.ops) {
    if (op.kind == graph::OpKind::cpu_wait) continue;
    const int name = tr.intern_name(op.name);
    const int kind = tr.intern_kind(graph::to_string(op.kind));
    const int lane = tr.intern_lane(graph::to_string(op.stream));
    for (int r = 0; r < world; ++r) {
      const graph::Interval& i = t.timeline.at(op.id, r);
      if (i.start < 0) continue;
      tr.ranks[static_cast<std::size_t>(r)].activities.push_back(
          Activity{op.id, name, kind, class_of(op.kind), lane, op.step, -1, i.start, i.end});
    }
  }
  for (auto& rt : tr.ranks) {
    std::stable_sort(rt.activities.begin(), rt.activities.end(), [](const Activity& a, const Activity& b) { return a.start < b.start; });
  }
  return tr;
}

// `e` with the line and column of the key it names, read again from `file` (the timeline was
// parsed streaming; an error is rare enough to read it twice). Gzipped or huge files keep `e`.
ConfigError located_in_file(const ConfigError& e, const fs::path& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec || size > (std::uintmax_t{256} << 20)) return e;
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string t = text.str();
  if (t.size() >= 2 && static_cast<unsigned char>(t[0]) == 0x1f && static_cast<unsigned char>(t[1]) == 0x8b) return e;
  return located(e, t);
}

Trace load_trace(const TraceRequest& req) {
  if (req.paths.empty()) throw ConfigError(Location{"<command line>", 0, 0}, "", "no trace given");
  const Inputs in = expand(req.paths);
  if (in.files.size() > 1 || !in.directories.empty()) return several_kineto_traces(in, req);
  const std::string file = in.files.front().string();
  ParsedTraceFile parsed = read_trace_file(in.files.front());
  if (parsed.is_kineto) return one_kineto_trace(parsed.kineto, req);
  const nlohmann::json& j = parsed.document;
  if (j.is_object() && j.contains("format") && j["format"] == "shardsim-timeline") {
    try {
      return trace_from_timeline(graph::timeline_from_json(j, file), file);
    } catch (const ConfigError& e) {
      throw located_in_file(e, in.files.front());
    }
  }
  not_a_trace(file);
}

Trace load_trace(const fs::path& file) {
  return load_trace(TraceRequest{{file}, {}, {}});
}

}  // namespace shardsim::validate
