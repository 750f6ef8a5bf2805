#include "validate/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace shardsim::validate {
namespace {

// The ranks a trace holds, as runs: "0..31, 256..287" (a pipelined run's timeline keeps the first
// ranks of every stage).
std::string rank_runs(const Trace& t) {
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < t.ranks.size();) {
    std::size_t j = i;
    while (j + 1 < t.ranks.size() && t.ranks[j + 1].rank == t.ranks[j].rank + 1) ++j;
    runs.push_back(i == j ? fmt::format("{}", t.ranks[i].rank) : fmt::format("{}..{}", t.ranks[i].rank, t.ranks[j].rank));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(runs, ", "));
}

std::size_t rank_index(const Trace& t, int rank, const char* which) {
  if (const auto i = t.index_of(rank)) return *i;
  if (t.ranks.size() == 1 && !t.ranks_recorded) return 0;  // a single trace that does not say its rank
  throw ConfigError(Location{t.label, 0, 0}, "ranks",
                    t.ranks.size() == 1
                        ? fmt::format("the {} trace holds rank {} only; expected rank {} (--rank)", which, t.ranks.front().rank, rank)
                        : fmt::format("the {} trace holds ranks {}; expected rank {} (--rank)", which, rank_runs(t), rank));
}

void check_same_graph(const Trace& a, const Trace& b) {
  // A replay of another job (another world size) aligns op ids that mean something else.
  if (a.world_size != b.world_size) {
    throw ConfigError(Location{b.label, 0, 0}, "world_size",
                      fmt::format("a job of {} ranks, but {} is of {}; expected timelines of the same job (the graph shardsim export wrote "
                                  "for it)",
                                  b.world_size, a.label, a.world_size));
  }
  std::map<int, std::string> names;
  for (const auto& rank : a.ranks) {
    for (const auto& x : rank.activities) names[x.op] = a.name_of(x);
  }
  for (const auto& rank : b.ranks) {
    for (const auto& x : rank.activities) {
      const auto it = names.find(x.op);
      if (it != names.end() && it->second != b.name_of(x)) {
        throw ConfigError(Location{b.label, 0, 0}, "ops",
                          fmt::format("op {} is \"{}\" here and \"{}\" in {}; expected timelines of the same graph (shardsim export)", x.op,
                                      b.name_of(x), it->second, a.label));
      }
    }
  }
}

// The simulated step compared: the graph's last.
std::size_t last_step(const Trace& t, std::size_t rank) {
  const auto& steps = t.ranks[rank].steps;
  if (steps.empty()) throw ConfigError(Location{t.label, 0, 0}, "steps", "no step in this trace");
  return steps.size() - 1;
}

// The measured step drawn: `wanted` by number, or the one closest to the median step time.
std::size_t drawn_step(const Trace& t, const std::vector<StepMetrics>& steps, std::optional<int> wanted, double median) {
  if (wanted) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].number == *wanted) return i;
    }
    std::string kept;
    for (const auto& s : steps) kept += fmt::format("{}{}", kept.empty() ? "" : ", ", s.number);
    throw ConfigError(Location{t.label, 0, 0}, "steps", fmt::format("--step {} is not among the steps kept ({})", *wanted, kept));
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < steps.size(); ++i) {
    if (std::fabs(steps[i].step_time - median) < std::fabs(steps[best].step_time - median)) best = i;
  }
  return best;
}

void compare_ops(const Trace& sim, std::size_t si, const Trace& meas, std::size_t mi, Comparison& c) {
  const int sim_step = static_cast<int>(last_step(sim, si));
  const int meas_step = static_cast<int>(last_step(meas, mi));
  std::map<int, const Activity*> measured;
  for (const auto& a : meas.ranks[mi].activities) {
    if (a.step == meas_step) measured[a.op] = &a;
  }
  double abs_error = 0;
  double total = 0;
  double offsets = 0;
  std::vector<OpRow> rows;
  for (const auto& a : sim.ranks[si].activities) {
    if (a.step != sim_step) continue;
    const auto it = measured.find(a.op);
    if (it == measured.end()) continue;
    const Activity& b = *it->second;
    rows.push_back(OpRow{a.op, sim.name_of(a), sim.kind_of(a), a.end - a.start, b.end - b.start});
    abs_error += std::fabs(rows.back().simulated - rows.back().measured);
    total += rows.back().measured;
    offsets += std::fabs((a.start - c.simulated.window_start) - (b.start - c.measured_steps.back().window_start));
  }
  c.ops_compared = static_cast<int>(rows.size());
  c.op_time_error = total > 0 ? abs_error / total : 0;
  c.mean_start_offset = rows.empty() ? 0 : offsets / static_cast<double>(rows.size());
  std::sort(rows.begin(), rows.end(),
            [](const OpRow& x, const OpRow& y) { return std::fabs(x.simulated - x.measured) > std::fabs(y.simulated - y.measured); });
  rows.resize(std::min<std::size_t>(rows.size(), 5));
  c.largest = std::move(rows);
}

void fill_kinds(Comparison& c) {
  const auto& sim = c.by_op_id ? c.simulated.busy_by_kind : c.simulated.busy_by_class;
  const auto& meas = c.by_op_id ? c.measured.busy_by_kind : c.measured.busy_by_class;
  const auto& sim_n = c.by_op_id ? c.simulated.count_by_kind : c.simulated.count_by_class;
  const auto& meas_n = c.by_op_id ? c.measured.count_by_kind : c.measured.count_by_class;
  std::set<std::string> kinds;
  for (const auto& [k, v] : sim) kinds.insert(k);
  for (const auto& [k, v] : meas) kinds.insert(k);
  auto get = [](const auto& m, const std::string& k) { return m.count(k) > 0 ? m.at(k) : 0; };
  for (const auto& k : kinds) c.kinds.push_back(KindRow{k, get(sim, k), get(meas, k), get(sim_n, k), get(meas_n, k)});
}

void fill_differences(Comparison& c) {
  auto add = [&](std::string what, double s, double m) { c.differences.push_back(Difference{std::move(what), s, m}); };
  add("step time", c.simulated.step_time, c.measured.step_time);
  add("exposed communication", c.simulated.exposed_comm, c.measured.exposed_comm);
  add("GPU idle", c.simulated.idle, c.measured.idle);
  for (const auto& k : c.kinds) add(k.kind, k.simulated, k.measured);
  std::stable_sort(c.differences.begin() + 1, c.differences.end(), [](const Difference& a, const Difference& b) {
    return std::fabs(a.simulated - a.measured) > std::fabs(b.simulated - b.measured);
  });
}

}  // namespace

Comparison compare(const Trace& sim, const Trace& meas, const CompareOptions& o) {
  Comparison c;
  c.simulated_label = sim.label;
  c.measured_label = meas.label;
  c.simulated_origin = sim.origin;
  c.measured_origin = meas.origin;
  c.rank = o.rank;
  c.by_op_id = sim.has_op_ids && meas.has_op_ids;
  if (c.by_op_id) check_same_graph(sim, meas);
  const std::size_t si = rank_index(sim, o.rank, "simulated");
  const std::size_t mi = rank_index(meas, o.rank, "measured");
  c.step = static_cast<int>(last_step(sim, si));
  // Two profiler traces (a run against another) compare their means.
  c.simulated = sim.has_op_ids ? step_metrics(sim, si, static_cast<std::size_t>(c.step)) : mean_metrics(rank_step_metrics(sim, si));
  c.simulated_steps = sim.has_op_ids ? 1 : static_cast<int>(sim.ranks[si].steps.size());

  // A measured shardsim timeline (a replay) is compared step for step, its last step too.
  if (meas.has_op_ids) {
    c.measured_steps = {step_metrics(meas, mi, last_step(meas, mi))};
  } else {
    c.measured_steps = rank_step_metrics(meas, mi);
  }
  std::vector<double> times;
  for (const auto& s : c.measured_steps) times.push_back(s.step_time);
  c.measured_step_time = spread(times);
  c.measured = mean_metrics(c.measured_steps);
  c.drawn = drawn_step(meas, c.measured_steps, o.step, c.measured_step_time.median);
  c.steps_from = meas.steps_from;
  c.notes = meas.notes;
  c.rank_recorded = meas.ranks_recorded;
  fill_kinds(c);
  if (c.by_op_id) compare_ops(sim, si, meas, mi, c);

  if (!meas.has_op_ids) {
    for (std::size_t r = 0; r < meas.ranks.size(); ++r) {
      const auto steps = rank_step_metrics(meas, r);
      std::vector<double> t;
      for (const auto& s : steps) t.push_back(s.step_time);
      c.ranks.push_back(RankRow{meas.ranks[r].rank, spread(t), mean_metrics(steps)});
    }
    c.groups = group_rows(meas, mi);
    c.sizes = size_rows(meas, mi, o.predict);
    c.stragglers = stragglers(meas);
  }
  fill_differences(c);
  return c;
}

Comparison compare(const Trace& simulated, const Trace& measured, int rank) {
  return compare(simulated, measured, CompareOptions{rank, std::nullopt, {}});
}

}  // namespace shardsim::validate
