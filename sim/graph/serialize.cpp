#include "graph/serialize.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "core/json_text.hpp"

namespace shardsim::graph {
namespace {

using nlohmann::json;

template <class E, int N>
E enum_from(const JsonFields& in, const json& v, const std::string& path) {
  const std::string s = in.text(v, path);
  std::vector<std::string> names;
  for (int i = 0; i < N; ++i) {
    if (to_string(static_cast<E>(i)) == s) return static_cast<E>(i);
    names.emplace_back(to_string(static_cast<E>(i)));
  }
  in.fail(path, fmt::format("expected one of {}; got \"{}\"", fmt::join(names, ", "), s));
}

// Limits far above any real step and far below overflow.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
constexpr double kMaxBytes = 1e18;

json work_json(const Work& w) {
  json gemms = json::array();
  for (const auto& g : w.gemms) {
    if (g.type == GemmType::high) {
      gemms.push_back({g.m, g.n, g.k});
    } else {
      json shape{g.m, g.n, g.k, gemm_type_name(g.type)};
      if (g.precise_accum) shape.push_back("precise");  // float8 accumulation; absent: fast
      gemms.push_back(shape);
    }
  }
  json attn = json::array();
  for (const auto& a : w.attention) {
    json call{{"batch", a.batch},       {"seq", a.seq},       {"heads", a.heads},      {"kv_heads", a.kv_heads},
              {"head_dim", a.head_dim}, {"causal", a.causal}, {"backward", a.backward}};
    if (a.cp > 1) call["cp"] = a.cp;
    if (a.steps > 1) call["steps"] = a.steps;
    if (a.window > 0) call["window"] = a.window;
    attn.push_back(std::move(call));
  }
  json out{{"gemms", gemms},         {"attention", attn},          {"memory_bytes", w.memory_bytes},
           {"launches", w.launches}, {"pcie_bytes", w.pcie_bytes}, {"host_bytes", w.host_bytes}};
  if (w.column_cast_bytes > 0) out["column_cast_bytes"] = w.column_cast_bytes;
  if (w.nvme_read_bytes > 0) out["nvme_read_bytes"] = w.nvme_read_bytes;
  if (w.nvme_write_bytes > 0) out["nvme_write_bytes"] = w.nvme_write_bytes;
  return out;
}

Work work_from(const JsonFields& in, const json& j, const std::string& path) {
  Work w;
  const std::string gemms = json_path(path, "gemms");
  const json& g = in.array(in.field(j, "gemms", path), gemms);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", gemms, i);
    const json& shape = in.array(g[i], p);
    if (shape.size() < 3 || shape.size() > 5)
      in.fail(p, fmt::format("expected [m, n, k], [m, n, k, type] or [m, n, k, type, accumulation]; got {}", shape.dump()));
    GemmType type = GemmType::high;
    if (shape.size() >= 4) {
      const std::string name = shape[3].is_string() ? shape[3].get<std::string>() : shape[3].dump();
      const auto t = gemm_type_from_name(name);
      if (!t || *t == GemmType::high)
        in.fail(p + "[3]", fmt::format("expected a GEMM type (fp8, fp8_rowwise, mxfp8); got {}", shape[3].dump()));
      type = *t;
    }
    bool precise = false;
    if (shape.size() == 5) {
      if (type != GemmType::fp8 && type != GemmType::fp8_rowwise)
        in.fail(p + "[4]", fmt::format("an accumulation applies to fp8 and fp8_rowwise GEMMs; this one is {}", gemm_type_name(type)));
      if (shape[4] != "fast" && shape[4] != "precise") in.fail(p + "[4]", fmt::format("expected fast or precise; got {}", shape[4].dump()));
      precise = shape[4] == "precise";
    }
    w.gemms.push_back(Gemm{in.integer(shape[0], p + "[0]", 1, kMaxDim), in.integer(shape[1], p + "[1]", 1, kMaxDim),
                           in.integer(shape[2], p + "[2]", 1, kMaxDim), type, precise});
  }
  const std::string attention = json_path(path, "attention");
  const json& a = in.array(in.field(j, "attention", path), attention);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", attention, i);
    const auto num = [&](const char* key, std::int64_t max) { return in.integer(in.field(a[i], key, p), json_path(p, key), 1, max); };
    w.attention.push_back(AttentionCall{num("batch", kMaxDim), num("seq", kMaxDim), static_cast<int>(num("heads", 1 << 20)),
                                        static_cast<int>(num("kv_heads", 1 << 20)), static_cast<int>(num("head_dim", 1 << 20)),
                                        in.boolean(in.field(a[i], "causal", p), json_path(p, "causal")),
                                        in.boolean(in.field(a[i], "backward", p), json_path(p, "backward"))});
    if (a[i].contains("cp")) w.attention.back().cp = static_cast<int>(num("cp", 1 << 20));
    if (a[i].contains("steps")) w.attention.back().steps = static_cast<int>(num("steps", 1 << 20));
    if (a[i].contains("window")) {
      AttentionCall& call = w.attention.back();
      call.window = num("window", kMaxDim);
      if (!call.causal || call.cp > 1 || call.steps > 1)
        in.fail(json_path(p, "window"), "a sliding window applies to causal attention without context parallelism (cp 1, steps 1)");
    }
  }
  w.memory_bytes = in.number(in.field(j, "memory_bytes", path), json_path(path, "memory_bytes"), 0, kMaxBytes);
  w.launches = static_cast<int>(in.integer(in.field(j, "launches", path), json_path(path, "launches"), 0, 1 << 24));
  if (j.contains("pcie_bytes")) w.pcie_bytes = in.number(j["pcie_bytes"], json_path(path, "pcie_bytes"), 0, kMaxBytes);
  if (j.contains("host_bytes")) w.host_bytes = in.number(j["host_bytes"], json_path(path, "host_bytes"), 0, kMaxBytes);
  if (j.contains("column_cast_bytes"))
    w.column_cast_bytes = in.number(j["column_cast_bytes"], json_path(path, "column_cast_bytes"), 0, kMaxBytes);
  if (j.contains("nvme_read_bytes")) w.nvme_read_bytes = in.number(j["nvme_read_bytes"], json_path(path, "nvme_read_bytes"), 0, kMaxBytes);
  if (j.contains("nvme_write_bytes"))
    w.nvme_write_bytes = in.number(j["nvme_write_bytes"], json_path(path, "nvme_write_bytes"), 0, kMaxBytes);
  return w;
}

json effects_json(const std::vector<MemEffect>& effects) {
  json mem = json::array();
  for (const auto& m : effects) {
    json e = {{"category", std::string(to_string(m.category))},
              {"bytes", m.bytes},
              {"at_end", m.at_end},
              {"pool", std::string(to_string(m.pool))}};
    if (m.at_issue) e["at_issue"] = true;
    if (m.not_before >= 0) e["not_before"] = m.not_before;
    if (m.first_step_only) e["first_step_only"] = true;
    if (m.tensor >= 0) e["tensor"] = m.tensor;
    mem.push_back(std::move(e));
  }
  return mem;
}

// `ops`: how many ops the graph has, which an effect's not_before names (0: none may be named).
std::vector<MemEffect> effects_from(const JsonFields& in, const json& j, const std::string& path, std::int64_t ops = 0) {
  std::vector<MemEffect> out;
  const json& list = in.array(j, path);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", path, i);
    const json& m = list[i];
    const auto flag = [&](const char* key) { return m.contains(key) && in.boolean(m[key], json_path(p, key)); };
    out.push_back(MemEffect{enum_from<MemCategory, kMemCategories>(in, in.field(m, "category", p), json_path(p, "category")),
                            in.number(in.field(m, "bytes", p), json_path(p, "bytes"), -kMaxBytes, kMaxBytes), flag("at_end"),
                            enum_from<Pool, kPools>(in, in.field(m, "pool", p), json_path(p, "pool")), flag("at_issue")});
    if (m.contains("not_before")) {
      if (ops == 0) in.fail(json_path(p, "not_before"), "an op id, which the initial memory has none of; expected no not_before here");
      out.back().not_before = static_cast<int>(in.integer(m["not_before"], json_path(p, "not_before"), 0, ops - 1));
    }
    out.back().first_step_only = flag("first_step_only");
    if (m.contains("tensor")) out.back().tensor = static_cast<int>(in.integer(m["tensor"], json_path(p, "tensor"), 0, kOpTensors - 1));
  }
  return out;
}

json op_json(const Op& op) {
  json o{{"id", op.id},
         {"kind", std::string(to_string(op.kind))},
         {"stream", std::string(to_string(op.stream))},
         {"name", op.name},
         {"unit", op.unit},
         {"step", op.step},
         {"micro", op.micro},
         {"group", std::string(to_string(op.group))},
         {"bytes", op.bytes},
         {"memory", effects_json(op.memory)}};
  if (!op.is_collective()) o["work"] = work_json(op.work);
  if (op.stage >= 0) o["stage"] = op.stage;
  if (op.peer_stage >= 0) o["peer_stage"] = op.peer_stage;
  if (op.shift > 0) o["shift"] = op.shift;
  if (op.cpu_s > 0) o["cpu_s"] = op.cpu_s;
  return o;
}

json info_json(const GraphInfo& info) {
  json out{{"scenario", info.scenario},
           {"world_size", info.world_size},
           {"gpus_per_node", info.gpus_per_node},
           {"tp_group", info.tp_group},
           {"pp_group", info.pp_group},
           {"cp_group", info.cp_group},
           {"shard_group", info.shard_group},
           {"replicate_group", info.replicate_group},
           {"reshard_group", info.reshard_group},
           {"steps", info.steps},
           {"micro_steps", info.micro_steps},
           {"tokens_per_micro_step", info.tokens_per_micro_step},
           {"initial_memory", effects_json(info.initial_memory)}};
  if (!info.stage_initial_memory.empty()) {
    json stages = json::array();
    for (const auto& effects : info.stage_initial_memory) stages.push_back(effects_json(effects));
    out["stage_initial_memory"] = std::move(stages);
  }
  return out;
}

// `text` (a value dumped with indent 1) as it reads `depth` levels down in a document.
void append_indented(std::string& out, const std::string& text, int depth) {
  for (const char c : text) {
    out += c;
    if (c == '\n') out.append(static_cast<std::size_t>(depth), ' ');
  }
}

}  // namespace

json to_json(const StepGraph& g) {
  json ops = json::array();
  for (std::size_t i = 0; i < g.size(); ++i) ops.push_back(op_json(g.op(static_cast<int>(i))));
  json edges = json::array();
  for (std::size_t i = 0; i < g.size(); ++i) {
    for (const auto& [to, kind] : g.successors(static_cast<int>(i)))
      edges.push_back({static_cast<int>(i), to, std::string(to_string(kind))});
  }
  return json{{"format", "shardsim-graph"},
              {"format_version", kGraphFormatVersion},
              {"info", info_json(g.info)},
              {"ops", std::move(ops)},
              {"edges", std::move(edges)}};
}

void write_json(const StepGraph& g, const TextWriter& write) {
  // to_json(g).dump(1), element by element: keys in nlohmann's order (edges, format,
  // format_version, info, ops), each element at its depth. A long pipelined step's graph has
  // millions of ops and edges, whose document took gigabytes.
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  std::string out = "{\n \"edges\": [";
  const auto flush = [&] {
    if (out.size() >= kPiece) {
      write(out);
      out.clear();
    }
  };
  bool any = false;
  for (std::size_t i = 0; i < g.size(); ++i) {
    for (const auto& [to, kind] : g.successors(static_cast<int>(i))) {
      out += any ? ",\n  " : "\n  ";
      any = true;
      append_indented(out, json{static_cast<int>(i), to, std::string(to_string(kind))}.dump(1), 2);
      flush();
    }
  }
  out += any ? "\n ],\n" : "],\n";
  out += fmt::format(" \"format\": \"shardsim-graph\",\n \"format_version\": {},\n \"info\": ", kGraphFormatVersion);
  append_indented(out, info_json(g.info).dump(1), 1);
  out += ",\n \"ops\": [";
  for (std::size_t i = 0; i < g.size(); ++i) {
    out += i > 0 ? ",\n  " : "\n  ";
    append_indented(out, op_json(g.op(static_cast<int>(i))).dump(1), 2);
    flush();
  }
  out += g.size() > 0 ? "\n ]\n}" : "]\n}";
  write(out);
}

StepGraph from_json(const json& j, const std::string& source) {
  const JsonFields in(source);
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != "shardsim-graph") {
    in.fail("format", "not a shardsim graph (expected \"format\": \"shardsim-graph\")");
  }
  if (const auto v = in.integer(in.field(j, "format_version", ""), "format_version", 0, 1'000'000); v != kGraphFormatVersion) {
    in.fail("format_version", fmt::format("expected {}; got {}", kGraphFormatVersion, v));
  }
  StepGraph g;
  const json& info = in.field(j, "info", "");
  const auto count = [&](const char* key, std::int64_t min, std::int64_t max) {
    return static_cast<int>(in.integer(in.field(info, key, "info"), json_path("info", key), min, max));
  };
  g.info.scenario = in.text(in.field(info, "scenario", "info"), "info.scenario");
  g.info.world_size = count("world_size", 1, 1'000'000);
  g.info.gpus_per_node = count("gpus_per_node", 1, 1024);
  g.info.shard_group = count("shard_group", 1, g.info.world_size);
  g.info.replicate_group = count("replicate_group", 1, g.info.world_size);
  g.info.reshard_group = info.contains("reshard_group") ? count("reshard_group", 1, g.info.world_size) : 1;
  g.info.tp_group = info.contains("tp_group") ? count("tp_group", 1, g.info.world_size) : 1;
  g.info.pp_group = info.contains("pp_group") ? count("pp_group", 1, g.info.world_size) : 1;
  g.info.cp_group = info.contains("cp_group") ? count("cp_group", 1, g.info.world_size) : 1;
  if (g.info.cp_group > 1 && g.info.shard_group % g.info.cp_group != 0 && g.info.replicate_group % g.info.cp_group != 0) {
    in.fail("info.cp_group", fmt::format("{} does not divide the shard group ({}) or the replicate group ({}); expected a divisor of one",
                                         g.info.cp_group, g.info.shard_group, g.info.replicate_group));
  }
  const int stage_ranks = g.info.pp_group * g.info.tp_group * g.info.shard_group;
  if (g.info.world_size % stage_ranks != 0 || g.info.world_size / stage_ranks != g.info.replicate_group ||
      g.info.shard_group % g.info.reshard_group != 0) {
    in.fail("info", fmt::format("groups that do not tile the world: world_size {} = pp_group x tp_group x shard_group x replicate_group "
                                "({} x {} x {} x {}) with reshard_group {} dividing shard_group expected",
                                g.info.world_size, g.info.pp_group, g.info.tp_group, g.info.shard_group, g.info.replicate_group,
                                g.info.reshard_group));
  }
  g.info.steps = count("steps", 1, 100);
  g.info.micro_steps = count("micro_steps", 1, 1 << 16);
  g.info.tokens_per_micro_step =
      in.number(in.field(info, "tokens_per_micro_step", "info"), "info.tokens_per_micro_step", 1e-6, static_cast<double>(kMaxDim));
  g.info.initial_memory = effects_from(in, in.field(info, "initial_memory", "info"), "info.initial_memory");
  if (info.contains("stage_initial_memory")) {
    const json& stages = in.array(info["stage_initial_memory"], "info.stage_initial_memory");
    if (static_cast<int>(stages.size()) != g.info.pp_group) {
      in.fail("info.stage_initial_memory",
              fmt::format("{} stages' memory; expected one per pipeline stage ({})", stages.size(), g.info.pp_group));
    }
    for (std::size_t i = 0; i < stages.size(); ++i) {
      g.info.stage_initial_memory.push_back(effects_from(in, stages[i], fmt::format("info.stage_initial_memory[{}]", i)));
    }
  }
  const json& ops = in.array(in.field(j, "ops", ""), "ops");
  if (ops.empty()) in.fail("ops", "no ops; expected the step graph of a scenario (shardsim export SCENARIO --out FILE)");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const json& o = ops[i];
    const std::string p = fmt::format("ops[{}]", i);
    const auto integer = [&](const char* key, std::int64_t min, std::int64_t max) {
      return static_cast<int>(in.integer(in.field(o, key, p), json_path(p, key), min, max));
    };
    if (integer("id", 0, std::numeric_limits<int>::max()) != static_cast<int>(i))
      in.fail(json_path(p, "id"), fmt::format("expected {} (op ids are 0, 1, 2, ... in order)", i));
    Op op;
    op.kind = enum_from<OpKind, kOpKinds>(in, in.field(o, "kind", p), json_path(p, "kind"));
    op.stream = enum_from<Stream, kStreams>(in, in.field(o, "stream", p), json_path(p, "stream"));
    op.name = in.text(in.field(o, "name", p), json_path(p, "name"));
    op.unit = integer("unit", -1, 1 << 30);
    op.step = integer("step", 0, g.info.steps - 1);
    op.micro = integer("micro", 0, g.info.micro_steps - 1);
    op.group = enum_from<Group, kGroups>(in, in.field(o, "group", p), json_path(p, "group"));
    op.bytes = in.number(in.field(o, "bytes", p), json_path(p, "bytes"), 0, kMaxBytes);
    op.memory = effects_from(in, in.field(o, "memory", p), json_path(p, "memory"), static_cast<std::int64_t>(ops.size()));
    if (o.contains("work")) op.work = work_from(in, o["work"], json_path(p, "work"));
    if (o.contains("stage")) op.stage = integer("stage", 0, g.info.pp_group - 1);
    if (o.contains("peer_stage")) op.peer_stage = integer("peer_stage", 0, g.info.pp_group - 1);
    if (o.contains("cpu_s")) op.cpu_s = in.number(o["cpu_s"], json_path(p, "cpu_s"), 0, 1);
    if (o.contains("shift")) op.shift = integer("shift", 1, std::max({1, g.info.tp_group - 1, g.info.cp_group - 1}));
    if (op.group == Group::pp && (op.stage < 0 || op.peer_stage < 0)) {
      in.fail(p, "a collective of group \"pp\" has a stage and a peer_stage");
    }
    if (op.kind == OpKind::send && op.group != Group::pp && ((op.group != Group::tp && op.group != Group::cp) || op.shift < 1)) {
      in.fail(p,
              "a send (kind \"send\") is of group \"pp\" (between stages), or \"tp\" or \"cp\" with a shift >= 1 (async TP's "
              "copies, ring attention's rotations)");
    }
    g.add_op(std::move(op));
  }
  const auto n = static_cast<std::int64_t>(g.size());
  const json& edges = in.array(in.field(j, "edges", ""), "edges");
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const std::string p = fmt::format("edges[{}]", i);
    const json& e = in.array(edges[i], p);
    if (e.size() != 3) in.fail(p, fmt::format("expected [from, to, kind]; got {}", e.dump()));
    const auto from = static_cast<int>(in.integer(e[0], p + "[0]", 0, n - 1));
    const auto to = static_cast<int>(in.integer(e[1], p + "[1]", 0, n - 1));
    g.add_edge(from, to, enum_from<EdgeKind, 5>(in, e[2], p + "[2]"));
  }
  try {
    (void)g.topological_order();
  } catch (const RuntimeError&) {
    in.fail("edges", "the edges form a cycle: the schedule would deadlock; expected a graph from shardsim export");
  }
  return g;
}

}  // namespace shardsim::graph
