#include "validate/cpu_dispatch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace shardsim::validate {

std::optional<DispatchEstimate> cpu_dispatch(const KinetoEvents& events) {
  std::unordered_set<std::int64_t> launched;  // correlation ids of GPU work
  for (const GpuOp& op : events.gpu) {
    if (op.correlation >= 0) launched.insert(op.correlation);
  }
  std::vector<const Launch*> calls;  // launches and synchronizing calls, by start
  std::vector<double> durations;
  for (const Launch& l : events.launches) {
    const bool launches = launched.contains(l.correlation);
    if (!launches && !l.synchronizes) continue;
    calls.push_back(&l);
    if (launches) durations.push_back(l.dur);
  }
  if (durations.size() < 2) return std::nullopt;
  std::nth_element(durations.begin(), durations.begin() + static_cast<std::ptrdiff_t>(durations.size() / 2), durations.end());
  const double blocked_call = 100 * durations[durations.size() / 2];
  std::stable_sort(calls.begin(), calls.end(), [](const Launch* a, const Launch* b) { return a->ts < b->ts; });

  struct Thread {
    const Launch* last = nullptr;  // its last launch
    std::size_t seen = 0;          // launches by any thread up to and including it
    bool held = false;             // a synchronizing call since
  };
  std::vector<std::pair<std::int64_t, Thread>> threads;
  const auto thread = [&](std::int64_t tid) -> Thread& {
    for (auto& [id, t] : threads) {
      if (id == tid) return t;
    }
    return threads.emplace_back(tid, Thread{}).second;
  };
  DispatchEstimate d;
  double sum = 0;
  std::size_t seen = 0;
  for (const Launch* call : calls) {
    Thread& t = thread(call->tid);
    if (call->synchronizes && !launched.contains(call->correlation)) {
      t.held = true;
      continue;
    }
    ++seen;
    if (t.last != nullptr) {
      const bool handed_over = seen - t.seen > 1;  // another thread launched in between
      if (t.held || handed_over || t.last->synchronizes || t.last->dur > blocked_call) {
        ++d.left_out;
      } else {
        sum += call->ts - t.last->ts;
        ++d.gaps;
      }
    }
    t = Thread{call, seen, false};
  }
  if (d.gaps == 0) return std::nullopt;
  d.per_kernel = sum / d.gaps * 1e-6;  // the trace's microseconds
  d.threads = static_cast<int>(std::count_if(threads.begin(), threads.end(), [](const auto& t) { return t.second.last != nullptr; }));
  return d;
}

std::string describe(const DispatchEstimate& d) {
  return fmt::format(
      "{:.3g} us of CPU per kernel launched ({} launch-to-launch gaps on {} thread{}, {} left out where the thread was held); "
      "recorded under the profiler, an upper bound for --set cluster.overrides.host.kernel_dispatch={:.3g}us",
      d.per_kernel * 1e6, d.gaps, d.threads, d.threads == 1 ? "" : "s", d.left_out, d.per_kernel * 1e6);
}

}  // namespace shardsim::validate
