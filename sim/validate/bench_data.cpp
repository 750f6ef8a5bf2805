#include "validate/bench_data.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json_text.hpp"

namespace shardsim::validate {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& source, const std::string& key, const std::string& message) {
  throw ConfigError(Location{source, 0, 0}, key, message);
}

// A number field > 0 (or >= 0 when `zero_ok`).
double number(const json& o, const char* key, const std::string& path, const std::string& source, bool zero_ok = false) {
  const auto it = o.find(key);
  if (it == o.end()) fail(source, path + "." + key, "missing required key");
  if (!it->is_number()) fail(source, path + "." + key, fmt::format("expected a number; got {}", it->dump()));
  const double v = it->get<double>();
  if (!(zero_ok ? v >= 0 : v > 0)) fail(source, path + "." + key, fmt::format("expected a number {} 0; got {}", zero_ok ? ">=" : ">", v));
  return v;
}

std::int64_t integer(const json& o, const char* key, const std::string& path, const std::string& source) {
  const auto it = o.find(key);
  if (it == o.end()) fail(source, path + "." + key, "missing required key");
  // 2^63 and beyond are refused, not wrapped (JsonFields).
  return JsonFields(source).integer(*it, path + "." + key, 1, std::int64_t{1} << 50);
}

const json& array(const json& j, const char* key, const std::string& source) {
  static const json empty = json::array();
  const auto it = j.find(key);
  if (it == j.end()) return empty;
  if (!it->is_array()) fail(source, key, "expected an array of samples");
  return *it;
}

json attention_json(const graph::AttentionCall& a) {
  return {{"batch", a.batch},       {"seq", a.seq},       {"heads", a.heads},      {"kv_heads", a.kv_heads},
          {"head_dim", a.head_dim}, {"causal", a.causal}, {"backward", a.backward}};
}

}  // namespace

double CollectiveSample::bus_factor() const {
  const double f = static_cast<double>(ranks - 1) / ranks;
  return kind == graph::OpKind::all_reduce ? 2 * f : f;
}

void BenchResults::append(const BenchResults& o) {
  collectives.insert(collectives.end(), o.collectives.begin(), o.collectives.end());
  gemms.insert(gemms.end(), o.gemms.begin(), o.gemms.end());
  attention.insert(attention.end(), o.attention.begin(), o.attention.end());
  memory.insert(memory.end(), o.memory.begin(), o.memory.end());
}

json to_json(const BenchResults& b) {
  json coll = json::array();
  for (const auto& s : b.collectives) {
    coll.push_back({{"op", std::string(graph::to_string(s.kind))},
                    {"link", std::string(config::to_string(s.link))},
                    {"ranks", s.ranks},
                    {"ranks_per_node", s.ranks_per_node},
                    {"bytes", s.bytes},
                    {"time_s", s.seconds},
                    {"algbw_GBps", s.algbw() / 1e9},
                    {"busbw_GBps", s.busbw() / 1e9}});
  }
  json gemms = json::array();
  for (const auto& s : b.gemms) {
    json g{{"m", s.m},
           {"n", s.n},
           {"k", s.k},
           {"batch", s.batch},
           {"dtype", is_fp8(s.precision) ? "fp8" : "bf16"},
           {"time_s", s.seconds},
           {"tflops", s.flops() / s.seconds / 1e12}};
    if (is_fp8(s.precision)) g["accumulate"] = s.precision == GemmPrecision::fp8_precise ? "precise" : "fast";
    gemms.push_back(g);
  }
  json attn = json::array();
  for (const auto& s : b.attention) {
    json a = attention_json(s.call);
    a["time_s"] = s.seconds;
    a["tflops"] = s.call.flops() / s.seconds / 1e12;
    attn.push_back(a);
  }
  json mem = json::array();
  for (const auto& s : b.memory) mem.push_back({{"bytes", s.bytes}, {"time_s", s.seconds}, {"GBps", s.bytes / s.seconds / 1e9}});
  return {{"format", "shardsim-bench"},
          {"format_version", kBenchFormatVersion},
          {"backend", b.backend},
          {"device", b.device},
          {"scale", {{"compute", b.compute_scale}, {"bytes", b.bytes_scale}}},
          {"collectives", coll},
          {"gemms", gemms},
          {"attention", attn},
          {"memory", mem}};
}

BenchResults bench_from_json(const json& j, const std::string& source) {
  if (!j.is_object() || !j.contains("format") || j["format"] != "shardsim-bench") {
    fail(source, "format", "expected a shardsim-bench file (\"format\": \"shardsim-bench\"), as shardsim-bench writes");
  }
  if (!j.contains("format_version") || !j["format_version"].is_number_unsigned() || j["format_version"].get<std::uint64_t>() < 1 ||
      j["format_version"].get<std::uint64_t>() > kBenchFormatVersion) {
    fail(source, "format_version", fmt::format("expected 1..{}", kBenchFormatVersion));
  }
  BenchResults b;
  b.backend = j.value("backend", "");
  b.device = j.value("device", "");
  if (j.contains("scale")) {
    b.compute_scale = number(j["scale"], "compute", "scale", source);
    b.bytes_scale = number(j["scale"], "bytes", "scale", source);
  }
  const json& coll = array(j, "collectives", source);
  for (std::size_t i = 0; i < coll.size(); ++i) {
    const json& o = coll[i];
    const std::string path = fmt::format("collectives[{}]", i);
    CollectiveSample s;
    const std::string op = o.value("op", "");
    if (op == "all_gather") {
      s.kind = graph::OpKind::all_gather;
    } else if (op == "reduce_scatter") {
      s.kind = graph::OpKind::reduce_scatter;
    } else if (op == "all_reduce") {
      s.kind = graph::OpKind::all_reduce;
    } else {
      fail(source, path + ".op", fmt::format("expected one of all_gather, reduce_scatter, all_reduce; got \"{}\"", op));
    }
    const std::string link = o.value("link", "");
    if (link != "nvlink" && link != "nic") fail(source, path + ".link", fmt::format("expected nvlink or nic; got \"{}\"", link));
    s.link = link == "nvlink" ? config::LinkClass::nvlink : config::LinkClass::nic;
    s.ranks = static_cast<int>(integer(o, "ranks", path, source));
    s.ranks_per_node = static_cast<int>(integer(o, "ranks_per_node", path, source));
    if (s.ranks < 2 || s.ranks % s.ranks_per_node != 0) {
      fail(source, path + ".ranks",
           fmt::format("expected at least 2 ranks, a multiple of ranks_per_node ({}); got {}", s.ranks_per_node, s.ranks));
    }
    s.bytes = number(o, "bytes", path, source);
    s.seconds = number(o, "time_s", path, source);
    b.collectives.push_back(s);
  }
  const json& gemms = array(j, "gemms", source);
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const std::string path = fmt::format("gemms[{}]", i);
    const json& o = gemms[i];
    GemmSample g{integer(o, "m", path, source), integer(o, "n", path, source), integer(o, "k", path, source),
                 integer(o, "batch", path, source), number(o, "time_s", path, source)};
    // Files written before float8 GEMMs were timed have no dtype: bf16.
    if (const auto d = o.find("dtype"); d != o.end()) {
      if (*d != "bf16" && *d != "fp8") fail(source, path + ".dtype", fmt::format("expected bf16 or fp8; got {}", d->dump()));
      if (*d == "fp8") g.precision = GemmPrecision::fp8;
    }
    // Files written before the two accumulations were timed have none: fast, the one they ran.
    if (const auto a = o.find("accumulate"); a != o.end()) {
      if (!is_fp8(g.precision)) fail(source, path + ".accumulate", "applies to float8 GEMMs only (dtype fp8)");
      if (*a != "fast" && *a != "precise") fail(source, path + ".accumulate", fmt::format("expected fast or precise; got {}", a->dump()));
      if (*a == "precise") g.precision = GemmPrecision::fp8_precise;
    }
    b.gemms.push_back(g);
  }
  const json& attn = array(j, "attention", source);
  for (std::size_t i = 0; i < attn.size(); ++i) {
    const std::string path = fmt::format("attention[{}]", i);
    const json& o = attn[i];
    AttentionSample s;
    s.call.batch = integer(o, "batch", path, source);
    s.call.seq = integer(o, "seq", path, source);
    s.call.heads = static_cast<int>(integer(o, "heads", path, source));
    s.call.kv_heads = static_cast<int>(integer(o, "kv_heads", path, source));
    s.call.head_dim = static_cast<int>(integer(o, "head_dim", path, source));
    if (!o.contains("causal") || !o["causal"].is_boolean()) fail(source, path + ".causal", "expected true or false");
    if (!o.contains("backward") || !o["backward"].is_boolean()) fail(source, path + ".backward", "expected true or false");
    s.call.causal = o["causal"].get<bool>();
    s.call.backward = o["backward"].get<bool>();
    s.seconds = number(o, "time_s", path, source);
    b.attention.push_back(s);
  }
  const json& mem = array(j, "memory", source);
  for (std::size_t i = 0; i < mem.size(); ++i) {
    const std::string path = fmt::format("memory[{}]", i);
    b.memory.push_back(MemorySample{number(mem[i], "bytes", path, source), number(mem[i], "time_s", path, source)});
  }
  return b;
}

}  // namespace shardsim::validate
