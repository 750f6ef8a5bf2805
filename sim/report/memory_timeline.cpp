// One rank's memory over the step: the graph's allocations and frees replayed, in time order,
// through PyTorch's caching allocator (report/caching_allocator.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "report/caching_allocator.hpp"
#include "report/cpu_issue.hpp"
#include "report/metrics.hpp"

namespace shardsim::report {

double MemoryPoint::total() const {
  return std::accumulate(bytes.begin(), bytes.end(), 0.0);
}

MemoryTimeline memory_timeline(const graph::StepGraph& g, const graph::Timeline& t, int rank, const IssueRules& issue,
                               const AllocatorSettings& settings, const Deadline& deadline, const std::vector<graph::MemEffect>& runtime) {
  struct Event {
    double time;
    int order;  // frees before allocations at the same instant
    int op;
    graph::MemEffect effect;
  };
  std::vector<Event> events;
  bool any_at_issue = false;
  for (std::size_t o = 0; o < g.size() && !any_at_issue; ++o) {
    const auto& mem = g.op(static_cast<int>(o)).memory;
    any_at_issue = std::any_of(mem.begin(), mem.end(), [](const graph::MemEffect& m) { return m.at_issue; });
  }
  const std::vector<double> issued = any_at_issue ? cpu_issue_times(g, t, rank, issue) : std::vector<double>();
  const int stage = g.info.stage_of(rank);
  for (const int id : g.ops_on_stage(stage)) {
    const auto o = static_cast<std::size_t>(id);
    const graph::Interval& i = t.at(id, rank);
    for (const auto& m : g.op(id).memory) {
      double time = m.at_end ? i.end : m.at_issue && issued[o] >= 0 ? issued[o] : i.start;
      if (m.not_before >= 0 && g.op(m.not_before).runs_on_stage(stage)) time = std::max(time, t.at(m.not_before, rank).start);
      events.push_back(Event{time, m.bytes < 0 ? 0 : 1, id, m});
      if (m.tensor >= 0) events.back().effect.tensor = id * graph::kOpTensors + m.tensor;  // the op's own tensor
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.time != b.time ? a.time < b.time : a.order < b.order; });
  MemoryTimeline tl;
  tl.rank = rank;
  MemoryPoint cur;
  CachingAllocator allocator(settings);
  double host = 0;
  auto apply = [&](const graph::MemEffect& m) {
    const double size = static_cast<double>(CachingAllocator::round_size(std::fabs(m.bytes)));
    const double b = m.bytes < 0 ? -size : size;
    if (m.pool == graph::Pool::host) {
      host += b;
      tl.peak_host = std::max(tl.peak_host, host);
      return;
    }
    cur.bytes[static_cast<std::size_t>(m.category)] += b;
    if (b > 0) {
      allocator.allocate(m.pool, size, m.tensor);
      tl.peak_reserved = std::max(tl.peak_reserved, allocator.reserved());
      for (int p = 0; p < graph::kPools; ++p) {
        auto& high = tl.reserved_by_pool[static_cast<std::size_t>(p)];
        high = std::max(high, allocator.reserved(static_cast<graph::Pool>(p)));
      }
    } else {
      allocator.free(m.pool, size, m.tensor);
    }
    cur.reserved = allocator.reserved();
  };
  for (const auto& m : runtime) apply(m);
  for (const auto& m : g.info.initial_memory_of(rank)) apply(m);
  // A run of one simulated step is reported as the steps after it: the step's memory is replayed
  // once first, so that the allocator starts from the blocks a step leaves cached (and state the
  // first step creates lazily, the optimizer's, sits where it put it). Only the reserved
  // high-water mark keeps what the warm-up reached. A step that does not give back what it takes
  // (a graph that is not a whole training step) is not replayed: it has no steady state.
  bool first_step_effects = false;
  double net = 0, moved = 0;
  for (const Event& e : events) {
    first_step_effects = first_step_effects || e.effect.first_step_only;
    if (e.effect.first_step_only) continue;
    net += e.effect.bytes;
    moved += std::abs(e.effect.bytes);
  }
  const bool warm_up = g.info.steps == 1 && (first_step_effects || std::abs(net) <= 1e-9 * moved);
  if (warm_up) {
    std::size_t done = 0;
    for (const Event& e : events) {
      if (++done % 8192 == 0) deadline.check(fmt::format("while warming up the memory of rank {}", rank));
      apply(e.effect);
    }
  }
  tl.points.push_back(cur);
  tl.peak = cur.total();
  tl.at_peak = cur.bytes;
  tl.peak_op = "(before the first step)";
  const std::string phase = fmt::format("while summarising the memory of rank {}", rank);
  std::size_t done = 0;
  for (const Event& e : events) {
    if (++done % 8192 == 0) deadline.check(phase);
    if (warm_up && e.effect.first_step_only) continue;
    cur.time = e.time;
    apply(e.effect);
    if (tl.points.back().time == e.time) {
      tl.points.back() = cur;
    } else {
      tl.points.push_back(cur);
    }
    if (const double total = cur.total(); total > tl.peak) {
      tl.peak = total;
      tl.peak_time = e.time;
      tl.peak_op = g.op(e.op).name;
      tl.at_peak = cur.bytes;
    }
  }
  tl.unpaired_frees = allocator.unpaired_frees();
  tl.alloc_retries = allocator.retries();
  tl.alloc_failures = allocator.failures();
  return tl;
}

}  // namespace shardsim::report
