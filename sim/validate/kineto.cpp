#include "validate/kineto.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include "core/error.hpp"

namespace shardsim::validate {
namespace {

using nlohmann::json;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool contains_any(const std::string& s, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return s.find(w) != std::string::npos; });
}

// GPU-side event categories of Kineto's trace; "kernel" is spelled "Kernel" by older versions.
bool is_gpu_event(const std::string& cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}

}  // namespace

bool is_chrome_trace(const json& j) {
  return j.is_object() && j.contains("traceEvents") && j["traceEvents"].is_array();
}

KernelClass classify_kernel(std::string_view name) {
  const std::string n = lower(name);
  if (n.find("nccl") != std::string::npos) {
    if (contains_any(n, {"allgather", "all_gather"})) return {ActivityClass::all_gather, "all_gather"};
    if (contains_any(n, {"reducescatter", "reduce_scatter"})) return {ActivityClass::reduce_scatter, "reduce_scatter"};
    if (contains_any(n, {"allreduce", "all_reduce"})) return {ActivityClass::all_reduce, "all_reduce"};
    return {ActivityClass::other_comm, "other_comm"};
  }
  if (contains_any(n, {"flash", "fmha", "attention", "attn"})) return {ActivityClass::compute, "attention"};
  if (contains_any(n, {"gemm", "cutlass", "xmma", "nvjet", "cublas", "matmul"})) return {ActivityClass::compute, "gemm"};
  return {ActivityClass::compute, "other"};
}

Trace trace_from_kineto(const json& j, const std::string& source) {
  Trace tr;
  tr.label = source;
  tr.origin = "PyTorch profiler (Kineto)";
  tr.ranks.resize(1);
  if (j.contains("distributedInfo") && j["distributedInfo"].is_object()) {
    tr.first_rank = j["distributedInfo"].value("rank", 0);
  }
  int profiler_steps = 0;
  std::vector<Activity>& out = tr.ranks.front();
  for (const json& e : j["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const std::string name = e.value("name", "");
    if (name.rfind("ProfilerStep#", 0) == 0) {
      ++profiler_steps;
      continue;
    }
    if (!is_gpu_event(lower(e.value("cat", "")))) continue;
    const auto ts = e.find("ts");
    const auto dur = e.find("dur");
    if (ts == e.end() || dur == e.end() || !ts->is_number() || !dur->is_number()) continue;
    const KernelClass kc = classify_kernel(name);
    std::string lane;
    if (e.contains("args") && e["args"].is_object() && e["args"].contains("stream")) {
      lane = fmt::format("stream {}", e["args"]["stream"].dump());
    } else {
      lane = fmt::format("stream {}", e.contains("tid") ? e["tid"].dump() : "?");
    }
    const double start = ts->get<double>() * 1e-6;  // Chrome traces count microseconds
    out.push_back(Activity{-1, name, kc.kind, kc.cls, lane, 0, start, start + std::max(0.0, dur->get<double>()) * 1e-6});
  }
  if (out.empty()) {
    throw ConfigError(Location{source, 0, 0}, "traceEvents",
                      "no GPU kernels (events with \"cat\": \"kernel\"); profile with activities=[ProfilerActivity.CUDA]");
  }
  // Times relative to the first kernel, as a shardsim timeline's are to its t0.
  double t0 = out.front().start;
  for (const auto& a : out) t0 = std::min(t0, a.start);
  for (auto& a : out) {
    a.start -= t0;
    a.end -= t0;
  }
  std::sort(out.begin(), out.end(), [](const Activity& a, const Activity& b) { return a.start < b.start; });
  tr.steps = std::max(1, profiler_steps);
  return tr;
}

}  // namespace shardsim::validate
