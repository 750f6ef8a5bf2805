#include "validate/step_metrics.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace shardsim::validate {
namespace {

using Intervals = std::vector<std::pair<double, double>>;

// The union of the intervals as sorted disjoint intervals.
Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& [a, b] : v) {
    if (b <= a) continue;
    if (!out.empty() && a <= out.back().second) {
      out.back().second = std::max(out.back().second, b);
    } else {
      out.emplace_back(a, b);
    }
  }
  return out;
}

double length(const Intervals& disjoint) {
  double total = 0;
  for (const auto& [a, b] : disjoint) total += b - a;
  return total;
}

}  // namespace

StepMetrics step_metrics(const Trace& t, std::size_t rank, std::size_t step) {
  const RankTrace& r = t.ranks[rank];
  const Step& s = r.steps[step];
  StepMetrics m;
  m.number = s.number;
  m.window_start = s.start;
  m.window_end = s.end;
  m.step_time = s.length();
  Intervals compute;
  Intervals comm;
  for (const Activity& a : r.activities) {
    if (a.step != static_cast<int>(step)) continue;
    const double b = std::clamp(a.start, s.start, s.end);
    const double e = std::clamp(a.end, s.start, s.end);
    const std::string& kind = t.kind_of(a);
    const std::string cls(to_string(a.cls));
    m.busy_by_kind[kind] += e - b;
    m.count_by_kind[kind] += 1;
    m.busy_by_class[cls] += e - b;
    m.count_by_class[cls] += 1;
    if (e > b) (is_comm(a.cls) ? comm : compute).emplace_back(b, e);
  }
  const Intervals compute_u = merged(compute);
  const Intervals comm_u = merged(comm);
  Intervals all = compute_u;
  all.insert(all.end(), comm_u.begin(), comm_u.end());
  const Intervals all_u = merged(all);
  m.compute_busy = length(compute_u);
  m.comm_busy = length(comm_u);
  m.exposed_comm = length(all_u) - m.compute_busy;
  m.overlap = m.comm_busy > 0 ? 1.0 - m.exposed_comm / m.comm_busy : 1.0;
  m.idle = m.step_time - length(all_u);
  // Idle gaps: before the first op, between ops, after the last one.
  double at = s.start;
  std::vector<IdleGap> gaps;
  for (const auto& [a, b] : all_u) {
    if (a > at) gaps.push_back(IdleGap{at - s.start, a - at});
    at = std::max(at, b);
  }
  if (s.end > at) gaps.push_back(IdleGap{at - s.start, s.end - at});
  std::sort(gaps.begin(), gaps.end(), [](const IdleGap& x, const IdleGap& y) { return x.length > y.length; });
  gaps.resize(std::min<std::size_t>(gaps.size(), 3));
  m.longest_gaps = std::move(gaps);
  return m;
}

std::vector<StepMetrics> rank_step_metrics(const Trace& t, std::size_t rank) {
  std::vector<StepMetrics> out;
  for (std::size_t s = 0; s < t.ranks[rank].steps.size(); ++s) out.push_back(step_metrics(t, rank, s));
  return out;
}

StepMetrics mean_metrics(const std::vector<StepMetrics>& steps) {
  assert(!steps.empty());
  const double n = static_cast<double>(steps.size());
  StepMetrics m;
  m.number = steps.front().number;
  m.window_start = steps.front().window_start;
  m.window_end = steps.front().window_end;
  std::map<std::string, double> counts_kind;
  std::map<std::string, double> counts_class;
  for (const auto& s : steps) {
    m.step_time += s.step_time / n;
    m.compute_busy += s.compute_busy / n;
    m.comm_busy += s.comm_busy / n;
    m.exposed_comm += s.exposed_comm / n;
    m.idle += s.idle / n;
    for (const auto& [k, v] : s.busy_by_kind) m.busy_by_kind[k] += v / n;
    for (const auto& [k, v] : s.busy_by_class) m.busy_by_class[k] += v / n;
    for (const auto& [k, v] : s.count_by_kind) counts_kind[k] += v / n;
    for (const auto& [k, v] : s.count_by_class) counts_class[k] += v / n;
  }
  for (const auto& [k, v] : counts_kind) m.count_by_kind[k] = static_cast<int>(std::lround(v));
  for (const auto& [k, v] : counts_class) m.count_by_class[k] = static_cast<int>(std::lround(v));
  m.overlap = m.comm_busy > 0 ? 1.0 - m.exposed_comm / m.comm_busy : 1.0;
  const auto typical = std::min_element(steps.begin(), steps.end(), [&](const StepMetrics& a, const StepMetrics& b) {
    return std::fabs(a.step_time - m.step_time) < std::fabs(b.step_time - m.step_time);
  });
  m.longest_gaps = typical->longest_gaps;
  return m;
}

Spread spread(const std::vector<double>& values) {
  Spread s;
  s.n = static_cast<int>(values.size());
  if (values.empty()) return s;
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return s;
}

}  // namespace shardsim::validate
