#include "graph/serialize.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace shardsim::graph {
namespace {

using nlohmann::json;

template <class E, int N>
E enum_from(const json& v, const std::string& source, const char* what) {
  const std::string s = v.get<std::string>();
  for (int i = 0; i < N; ++i) {
    if (to_string(static_cast<E>(i)) == s) return static_cast<E>(i);
  }
  throw ConfigError(Location{source, 0, 0}, what, fmt::format("unknown value \"{}\"", s));
}

json work_json(const Work& w) {
  json gemms = json::array();
  for (const auto& g : w.gemms) gemms.push_back({g.m, g.n, g.k});
  json attn = json::array();
  for (const auto& a : w.attention) {
    attn.push_back({{"batch", a.batch},
                    {"seq", a.seq},
                    {"heads", a.heads},
                    {"kv_heads", a.kv_heads},
                    {"head_dim", a.head_dim},
                    {"causal", a.causal},
                    {"backward", a.backward}});
  }
  return {{"gemms", gemms},         {"attention", attn},          {"memory_bytes", w.memory_bytes},
          {"launches", w.launches}, {"pcie_bytes", w.pcie_bytes}, {"host_bytes", w.host_bytes}};
}

Work work_from(const json& j) {
  Work w;
  for (const auto& g : j.at("gemms"))
    w.gemms.push_back(Gemm{g.at(0).get<std::int64_t>(), g.at(1).get<std::int64_t>(), g.at(2).get<std::int64_t>()});
  for (const auto& a : j.at("attention")) {
    w.attention.push_back(AttentionCall{a.at("batch").get<std::int64_t>(), a.at("seq").get<std::int64_t>(), a.at("heads").get<int>(),
                                        a.at("kv_heads").get<int>(), a.at("head_dim").get<int>(), a.at("causal").get<bool>(),
                                        a.at("backward").get<bool>()});
  }
  w.memory_bytes = j.at("memory_bytes").get<double>();
  w.launches = j.at("launches").get<int>();
  w.pcie_bytes = j.value("pcie_bytes", 0.0);
  w.host_bytes = j.value("host_bytes", 0.0);
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
    mem.push_back(std::move(e));
  }
  return mem;
}

std::vector<MemEffect> effects_from(const json& j, const std::string& source) {
  std::vector<MemEffect> out;
  for (const auto& m : j) {
    out.push_back(MemEffect{enum_from<MemCategory, kMemCategories>(m.at("category"), source, "category"), m.at("bytes").get<double>(),
                            m.value("at_end", false), enum_from<Pool, kPools>(m.at("pool"), source, "pool"),
                            m.value("at_issue", false)});
  }
  return out;
}

}  // namespace

json to_json(const StepGraph& g) {
  json ops = json::array();
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Op& op = g.op(static_cast<int>(i));
    const json mem = effects_json(op.memory);
    json o{{"id", op.id},
           {"kind", std::string(to_string(op.kind))},
           {"stream", std::string(to_string(op.stream))},
           {"name", op.name},
           {"unit", op.unit},
           {"step", op.step},
           {"micro", op.micro},
           {"group", std::string(to_string(op.group))},
           {"bytes", op.bytes},
           {"memory", mem}};
    if (!op.is_collective()) o["work"] = work_json(op.work);
    ops.push_back(std::move(o));
  }
  json edges = json::array();
  for (std::size_t i = 0; i < g.size(); ++i) {
    for (const auto& [to, kind] : g.successors(static_cast<int>(i)))
      edges.push_back({static_cast<int>(i), to, std::string(to_string(kind))});
  }
  const json initial = effects_json(g.info.initial_memory);
  const GraphInfo& info = g.info;
  return {{"format", "shardsim-graph"},
          {"format_version", kGraphFormatVersion},
          {"info",
           {{"scenario", info.scenario},
            {"world_size", info.world_size},
            {"gpus_per_node", info.gpus_per_node},
            {"shard_group", info.shard_group},
            {"replicate_group", info.replicate_group},
            {"reshard_group", info.reshard_group},
            {"steps", info.steps},
            {"micro_steps", info.micro_steps},
            {"tokens_per_micro_step", info.tokens_per_micro_step},
            {"initial_memory", initial}}},
          {"ops", ops},
          {"edges", edges}};
}

StepGraph from_json(const json& j, const std::string& source) {
  const Location where{source, 0, 0};
  if (!j.is_object() || j.value("format", "") != "shardsim-graph") {
    throw ConfigError(where, "format", "not a shardsim graph (expected \"format\": \"shardsim-graph\")");
  }
  if (j.value("format_version", 0) != kGraphFormatVersion) {
    throw ConfigError(where, "format_version", fmt::format("expected {}; got {}", kGraphFormatVersion, j.value("format_version", 0)));
  }
  StepGraph g;
  try {
    const json& info = j.at("info");
    g.info.scenario = info.at("scenario").get<std::string>();
    g.info.world_size = info.at("world_size").get<int>();
    g.info.gpus_per_node = info.at("gpus_per_node").get<int>();
    g.info.shard_group = info.at("shard_group").get<int>();
    g.info.replicate_group = info.at("replicate_group").get<int>();
    g.info.reshard_group = info.value("reshard_group", 1);
    g.info.steps = info.at("steps").get<int>();
    g.info.micro_steps = info.at("micro_steps").get<int>();
    g.info.tokens_per_micro_step = info.at("tokens_per_micro_step").get<std::int64_t>();
    g.info.initial_memory = effects_from(info.at("initial_memory"), source);
    for (const auto& o : j.at("ops")) {
      Op op;
      op.kind = enum_from<OpKind, 9>(o.at("kind"), source, "kind");
      op.stream = enum_from<Stream, kStreams>(o.at("stream"), source, "stream");
      op.name = o.at("name").get<std::string>();
      op.unit = o.at("unit").get<int>();
      op.step = o.at("step").get<int>();
      op.micro = o.at("micro").get<int>();
      op.group = enum_from<Group, 5>(o.at("group"), source, "group");
      op.bytes = o.at("bytes").get<double>();
      op.memory = effects_from(o.at("memory"), source);
      if (o.contains("work")) op.work = work_from(o.at("work"));
      if (o.at("id").get<int>() != static_cast<int>(g.size())) throw ConfigError(where, "ops", "op ids must be 0, 1, 2, ... in order");
      g.add_op(std::move(op));
    }
    const auto n = static_cast<int>(g.size());
    for (const auto& e : j.at("edges")) {
      const int from = e.at(0).get<int>();
      const int to = e.at(1).get<int>();
      if (from < 0 || from >= n || to < 0 || to >= n)
        throw ConfigError(where, "edges", fmt::format("edge {} -> {} names a missing op", from, to));
      g.add_edge(from, to, enum_from<EdgeKind, 5>(e.at(2), source, "edge kind"));
    }
  } catch (const json::exception& e) {
    throw ConfigError(where, "", fmt::format("malformed graph: {}", e.what()));
  }
  return g;
}

}  // namespace shardsim::graph
