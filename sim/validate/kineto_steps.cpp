#include "validate/kineto_steps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <unordered_map>

#include "core/error.hpp"

namespace shardsim::validate {
namespace {

constexpr std::string_view kProfilerStep = "ProfilerStep#";
constexpr std::string_view kOptimizerStep = "Optimizer.step#";

struct Span {
  double start = std::numeric_limits<double>::infinity();
  double end = -std::numeric_limits<double>::infinity();
  void add(double s, double e) {
    start = std::min(start, s);
    end = std::max(end, e);
  }
  [[nodiscard]] bool empty() const { return start > end; }
};

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// N of "ProfilerStep#N"; -1 if the rest is not a number.
int step_number(const std::string& name) {
  int n = -1;
  const char* first = name.data() + kProfilerStep.size();
  const char* last = name.data() + name.size();
  const auto [p, ec] = std::from_chars(first, last, n);
  return ec == std::errc() && p == last ? n : -1;
}

// The GPU ops each CPU range launched: for every range, the span of their GPU times. Ranges
// must be sorted by start and not overlap (ProfilerStep and optimizer ranges of one thread).
std::vector<Span> launched_spans(const KinetoEvents& ev, const std::vector<std::pair<double, double>>& ranges) {
  std::unordered_map<std::int64_t, double> launch_ts;
  launch_ts.reserve(ev.launches.size());
  for (const Launch& l : ev.launches) launch_ts.emplace(l.correlation, l.ts);
  std::vector<Span> out(ranges.size());
  for (const GpuOp& op : ev.gpu) {
    const auto it = launch_ts.find(op.correlation);
    if (op.correlation < 0 || it == launch_ts.end()) continue;
    const double t = it->second;
    const auto r = std::upper_bound(ranges.begin(), ranges.end(), t, [](double v, const auto& range) { return v < range.first; });
    if (r == ranges.begin()) continue;
    const auto i = static_cast<std::size_t>(std::prev(r) - ranges.begin());
    if (t <= ranges[i].second) out[i].add(op.ts, op.ts + op.dur);
  }
  return out;
}

// Windows from step starts: each runs to the next start when the next step follows it (numbers
// consecutive), otherwise for `last_length(i)`.
template <class LastLength>
void close_windows(std::vector<StepWindow>& steps, LastLength last_length) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const bool followed = i + 1 < steps.size() && steps[i + 1].number == steps[i].number + 1;
    steps[i].end = followed ? steps[i + 1].start : steps[i].start + last_length(i);
  }
}

bool from_gpu_profiler_steps(const KinetoEvents& ev, StepSplit& out) {
  std::map<int, Span> by_number;
  std::map<int, double> cpu_span;
  for (const Marker& m : ev.markers) {
    if (!starts_with(m.name, kProfilerStep)) continue;
    const int n = step_number(m.name);
    if (n < 0) continue;
    if (m.gpu) {
      by_number[n].add(m.ts, m.ts + m.dur);
    } else {
      cpu_span[n] = m.dur;
    }
  }
  if (by_number.empty()) return false;
  std::vector<Span> spans;
  for (const auto& [n, s] : by_number) {
    out.steps.push_back(StepWindow{n, s.start, s.end, cpu_span.count(n) > 0 ? cpu_span[n] : -1});
    spans.push_back(s);
  }
  close_windows(out.steps, [&](std::size_t i) { return spans[i].end - spans[i].start; });
  out.method = "ProfilerStep annotations on the GPU (each step from its start to the next step's start)";
  if (!cpu_span.empty())
    out.notes.push_back("ProfilerStep appears on the CPU and on the GPU: the GPU annotations are used, each step once");
  return true;
}

bool from_cpu_profiler_steps(const KinetoEvents& ev, StepSplit& out) {
  std::vector<const Marker*> cpu;
  for (const Marker& m : ev.markers) {
    if (!m.gpu && starts_with(m.name, kProfilerStep) && step_number(m.name) >= 0) cpu.push_back(&m);
  }
  if (cpu.empty()) return false;
  std::sort(cpu.begin(), cpu.end(), [](const Marker* a, const Marker* b) { return a->ts < b->ts; });
  std::vector<std::pair<double, double>> ranges;
  for (const Marker* m : cpu) ranges.emplace_back(m->ts, m->ts + m->dur);
  const std::vector<Span> launched = launched_spans(ev, ranges);
  std::vector<Span> kept;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    if (launched[i].empty()) {
      out.notes.push_back(fmt::format("{} launched no GPU work; left out", cpu[i]->name));
      continue;
    }
    out.steps.push_back(StepWindow{step_number(cpu[i]->name), launched[i].start, 0, cpu[i]->dur});
    kept.push_back(launched[i]);
  }
  if (out.steps.empty()) {
    throw ConfigError(Location{ev.file, 0, 0}, "traceEvents",
                      "ProfilerStep annotations launched no GPU work (no cuda_runtime launch shares a correlation id with a kernel); "
                      "expected a trace recorded with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]");
  }
  close_windows(out.steps, [&](std::size_t i) { return std::max(out.steps[i].cpu_span, kept[i].end - kept[i].start); });
  out.method = "ProfilerStep annotations on the CPU (each step from its first GPU op to the next step's first GPU op)";
  return true;
}

bool from_optimizer_steps(const KinetoEvents& ev, StepSplit& out) {
  std::vector<Span> ends;  // the GPU work of each optimizer step
  std::vector<Marker> gpu;
  std::vector<std::pair<double, double>> cpu;
  for (const Marker& m : ev.markers) {
    if (!starts_with(m.name, kOptimizerStep)) continue;
    if (m.gpu) {
      gpu.push_back(m);
    } else {
      cpu.emplace_back(m.ts, m.ts + m.dur);
    }
  }
  if (!gpu.empty()) {
    // One per stream the step ran on: overlapping annotations are one optimizer step.
    std::sort(gpu.begin(), gpu.end(), [](const Marker& a, const Marker& b) { return a.ts < b.ts; });
    for (const Marker& m : gpu) {
      if (!ends.empty() && m.ts <= ends.back().end) {
        ends.back().add(m.ts, m.ts + m.dur);
      } else {
        ends.emplace_back();
        ends.back().add(m.ts, m.ts + m.dur);
      }
    }
  } else if (!cpu.empty()) {
    std::sort(cpu.begin(), cpu.end());
    for (const Span& s : launched_spans(ev, cpu)) {
      if (!s.empty()) ends.push_back(s);
    }
    if (ends.empty()) return false;
  } else {
    return false;
  }
  double first = std::numeric_limits<double>::infinity();
  for (const GpuOp& op : ev.gpu) first = std::min(first, op.ts);
  double start = first;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    out.steps.push_back(StepWindow{static_cast<int>(i) + 1, start, ends[i].end, -1});
    start = ends[i].end;
  }
  std::size_t after = 0;
  for (const GpuOp& op : ev.gpu) after += op.ts >= start ? 1 : 0;
  out.method = fmt::format("optimizer steps (no ProfilerStep annotations): {} Optimizer.step ranges, each step ending with its GPU work",
                           ends.size());
  out.notes.push_back("step 1 starts at the trace's first GPU op (the trace may begin inside it)");
  if (after > 0) out.notes.push_back(fmt::format("{} GPU ops after the last optimizer step are in no step", after));
  return true;
}

bool from_repeating_pattern(const KinetoEvents& ev, StepSplit& out) {
  std::map<std::int64_t, std::vector<const GpuOp*>> by_stream;
  for (const GpuOp& op : ev.gpu) {
    if (op.kind == GpuOpKind::kernel) by_stream[op.stream].push_back(&op);
  }
  if (by_stream.empty()) return false;
  auto busiest =
      std::max_element(by_stream.begin(), by_stream.end(), [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  std::vector<const GpuOp*>& ops = busiest->second;
  std::sort(ops.begin(), ops.end(), [](const GpuOp* a, const GpuOp* b) { return a->ts < b->ts; });
  std::vector<int> names;
  names.reserve(ops.size());
  for (const GpuOp* op : ops) names.push_back(op->name);
  const std::size_t p = repeating_period(names);
  if (p == 0) return false;
  // The phase: the position in the period after the longest idle time, summed over repetitions.
  std::vector<double> idle(p, 0.0);
  double busy_until = ops.front()->ts;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    idle[i % p] += std::max(0.0, ops[i]->ts - busy_until);
    busy_until = std::max(busy_until, ops[i]->ts + ops[i]->dur);
  }
  const auto phase = static_cast<std::size_t>(std::max_element(idle.begin(), idle.end()) - idle.begin());
  int number = 1;
  for (std::size_t b = phase; b + p < ops.size(); b += p) {
    out.steps.push_back(StepWindow{number++, ops[b]->ts, ops[b + p]->ts, -1});
  }
  if (out.steps.empty()) return false;
  out.method = fmt::format(
      "a kernel sequence that repeats every {} kernels on stream {} (no ProfilerStep or optimizer annotations); steps start after the "
      "longest idle time of the sequence",
      p, busiest->first);
  out.notes.push_back("only whole repetitions count as steps: the GPU work before the first and after the last is in no step");
  return true;
}

}  // namespace

std::size_t repeating_period(const std::vector<int>& s) {
  const std::size_t n = s.size();
  for (std::size_t p = 2; 2 * p <= n; ++p) {
    const std::size_t budget = (n - p) / 50;  // 2 % mismatches
    std::size_t mismatches = 0;
    std::size_t i = 0;
    for (; i + p < n && mismatches <= budget; ++i) mismatches += s[i] != s[i + p] ? 1 : 0;
    if (mismatches <= budget) return p;
  }
  return 0;
}

StepSplit find_steps(const KinetoEvents& ev) {
  StepSplit out;
  if (from_gpu_profiler_steps(ev, out) || from_cpu_profiler_steps(ev, out) || from_optimizer_steps(ev, out) ||
      from_repeating_pattern(ev, out)) {
    return out;
  }
  throw ConfigError(Location{ev.file, 0, 0}, "traceEvents",
                    "cannot tell the training steps apart: no ProfilerStep#N annotations, no Optimizer.step, and no kernel sequence "
                    "that repeats; expected a trace of several steps recorded with torch.profiler.profile(schedule=...) and "
                    "prof.step() called once per step");
}

}  // namespace shardsim::validate
