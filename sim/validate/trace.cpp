#include "validate/trace.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "validate/kineto.hpp"

namespace shardsim::validate {
namespace {

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

// Traces of real runs reach hundreds of megabytes; refuse anything absurd rather than exhaust memory.
constexpr std::uintmax_t kMaxTraceBytes = std::uintmax_t{2} << 30U;

}  // namespace

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
    case ActivityClass::other_comm:
      return "other_comm";
  }
  return "compute";
}

Trace trace_from_timeline(const graph::TimelineFile& t, const std::string& label) {
  Trace tr;
  tr.label = label;
  tr.origin = t.meta.device.empty() ? fmt::format("{} ({})", t.meta.source, t.meta.backend)
                                    : fmt::format("{} ({}, {})", t.meta.source, t.meta.backend, t.meta.device);
  tr.has_op_ids = true;
  tr.steps = t.steps;
  tr.ranks.resize(static_cast<std::size_t>(t.timeline.world()));
  for (const auto& op : t.ops) {
    if (op.kind == graph::OpKind::cpu_wait) continue;
    for (int r = 0; r < t.timeline.world(); ++r) {
      const graph::Interval& i = t.timeline.at(op.id, r);
      if (i.start < 0) continue;
      tr.ranks[static_cast<std::size_t>(r)].push_back(Activity{op.id, op.name, std::string(graph::to_string(op.kind)), class_of(op.kind),
                                                               std::string(graph::to_string(op.stream)), op.step, i.start, i.end});
    }
  }
  return tr;
}

Trace load_trace(const std::filesystem::path& file) {
  const std::string source = file.string();
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) throw ConfigError(Location{source, 0, 0}, "", fmt::format("cannot read: {}", ec.message()));
  if (size > kMaxTraceBytes) throw ConfigError(Location{source, 0, 0}, "", fmt::format("{} bytes; expected a trace under 2 GiB", size));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(Location{source, 0, 0}, "", "cannot open for reading");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(Location{source, 0, 0}, "",
                      fmt::format("not valid JSON (byte {}): expected a shardsim-timeline or a PyTorch profiler trace", e.byte));
  }
  if (j.is_object() && j.contains("format") && j["format"] == "shardsim-timeline") {
    return trace_from_timeline(graph::timeline_from_json(j, source), source);
  }
  if (is_chrome_trace(j)) return trace_from_kineto(j, source);
  throw ConfigError(
      Location{source, 0, 0}, "format",
      "expected a shardsim-timeline (\"format\": \"shardsim-timeline\") or a PyTorch profiler trace ({\"traceEvents\": [...]})");
}

}  // namespace shardsim::validate
