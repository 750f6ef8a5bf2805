#include "validate/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"

namespace shardsim::validate {
namespace {

using Intervals = std::vector<std::pair<double, double>>;

double union_length(Intervals v) {
  std::sort(v.begin(), v.end());
  double total = 0;
  double s = 0;
  double e = -1;
  for (const auto& [a, b] : v) {
    if (a > e) {
      if (e > s) total += e - s;
      s = a;
      e = b;
    } else {
      e = std::max(e, b);
    }
  }
  if (e > s) total += e - s;
  return total;
}

// The step compared: the last one; it starts where the previous step's last op ended.
std::pair<double, double> window(const Trace& t) {
  if (!t.has_op_ids) {
    double end = 0;
    for (const auto& rank : t.ranks) {
      for (const auto& a : rank) end = std::max(end, a.end);
    }
    return {0.0, end};
  }
  const int last = t.steps - 1;
  double start = 0;
  double end = 0;
  for (const auto& rank : t.ranks) {
    for (const auto& a : rank) {
      if (a.step == last) end = std::max(end, a.end);
      if (a.step == last - 1) start = std::max(start, a.end);
    }
  }
  return {start, end};
}

bool in_step(const Trace& t, const Activity& a) {
  return !t.has_op_ids || a.step == t.steps - 1;
}

double relative(double sim, double meas) {
  return meas > 0 ? (sim - meas) / meas : std::nan("");
}

std::string percent(double r) {
  return std::isnan(r) ? "     n/a" : fmt::format("{:+7.1f} %", 100 * r);
}

std::size_t rank_index(const Trace& t, int rank, const char* which) {
  if (!t.has_op_ids) return 0;  // a Kineto trace is one rank's
  const int i = rank - t.first_rank;
  if (i < 0 || i >= static_cast<int>(t.ranks.size())) {
    throw ConfigError(Location{t.label, 0, 0}, "ranks",
                      fmt::format("the {} trace holds ranks {}..{}; expected rank {} (--rank)", which, t.first_rank,
                                  t.first_rank + static_cast<int>(t.ranks.size()) - 1, rank));
  }
  return static_cast<std::size_t>(i);
}

void check_same_graph(const Trace& a, const Trace& b) {
  std::map<int, std::string> names;
  for (const auto& rank : a.ranks) {
    for (const auto& x : rank) names[x.op] = x.name;
  }
  for (const auto& rank : b.ranks) {
    for (const auto& x : rank) {
      const auto it = names.find(x.op);
      if (it != names.end() && it->second != x.name) {
        throw ConfigError(Location{b.label, 0, 0}, "ops",
                          fmt::format("op {} is \"{}\" here and \"{}\" in {}; expected timelines of the same graph (shardsim export)", x.op,
                                      x.name, it->second, a.label));
      }
    }
  }
}

}  // namespace

StepMetrics step_metrics(const Trace& t, std::size_t rank, bool by_class) {
  StepMetrics m;
  std::tie(m.window_start, m.window_end) = window(t);
  const double per_step = t.has_op_ids ? 1.0 : static_cast<double>(t.steps);
  m.step_time = (m.window_end - m.window_start) / per_step;
  Intervals compute;
  Intervals comm;
  for (const Activity& a : t.ranks[rank]) {
    if (!in_step(t, a)) continue;
    const double s = std::clamp(a.start, m.window_start, m.window_end);
    const double e = std::clamp(a.end, m.window_start, m.window_end);
    const std::string kind = by_class ? std::string(to_string(a.cls)) : a.kind;
    m.busy_by_kind[kind] += (e - s) / per_step;
    m.count_by_kind[kind] += 1;
    if (e <= s) continue;
    (is_comm(a.cls) ? comm : compute).emplace_back(s, e);
  }
  m.compute_busy = union_length(compute) / per_step;
  m.comm_busy = union_length(comm) / per_step;
  Intervals both = comm;
  both.insert(both.end(), compute.begin(), compute.end());
  m.exposed_comm = (union_length(both) - union_length(compute)) / per_step;
  m.overlap = m.comm_busy > 0 ? 1.0 - m.exposed_comm / m.comm_busy : 1.0;
  return m;
}

Comparison compare(const Trace& sim, const Trace& meas, int rank) {
  Comparison c;
  c.simulated_label = sim.label;
  c.measured_label = meas.label;
  c.simulated_origin = sim.origin;
  c.measured_origin = meas.origin;
  c.rank = rank;
  c.step = sim.steps - 1;
  c.by_op_id = sim.has_op_ids && meas.has_op_ids;
  if (c.by_op_id) check_same_graph(sim, meas);
  const std::size_t si = rank_index(sim, rank, "simulated");
  const std::size_t mi = rank_index(meas, rank, "measured");
  c.simulated = step_metrics(sim, si, !c.by_op_id);
  c.measured = step_metrics(meas, mi, !c.by_op_id);

  std::set<std::string> kinds;
  for (const auto& [k, v] : c.simulated.busy_by_kind) kinds.insert(k);
  for (const auto& [k, v] : c.measured.busy_by_kind) kinds.insert(k);
  for (const auto& k : kinds) {
    auto get = [&](const StepMetrics& m) { return m.busy_by_kind.count(k) > 0 ? m.busy_by_kind.at(k) : 0.0; };
    auto count = [&](const StepMetrics& m) { return m.count_by_kind.count(k) > 0 ? m.count_by_kind.at(k) : 0; };
    c.kinds.push_back(KindRow{k, get(c.simulated), get(c.measured), count(c.simulated), count(c.measured)});
  }

  if (c.by_op_id) {
    std::map<int, const Activity*> measured;
    for (const auto& a : meas.ranks[mi]) {
      if (in_step(meas, a)) measured[a.op] = &a;
    }
    double abs_error = 0;
    double total = 0;
    double offsets = 0;
    std::vector<OpRow> rows;
    for (const auto& a : sim.ranks[si]) {
      if (!in_step(sim, a)) continue;
      const auto it = measured.find(a.op);
      if (it == measured.end()) continue;
      const Activity& b = *it->second;
      rows.push_back(OpRow{a.op, a.name, a.kind, a.end - a.start, b.end - b.start});
      abs_error += std::fabs(rows.back().simulated - rows.back().measured);
      total += rows.back().measured;
      offsets += std::fabs((a.start - c.simulated.window_start) - (b.start - c.measured.window_start));
    }
    c.ops_compared = static_cast<int>(rows.size());
    c.op_time_error = total > 0 ? abs_error / total : 0;
    c.mean_start_offset = rows.empty() ? 0 : offsets / static_cast<double>(rows.size());
    std::sort(rows.begin(), rows.end(),
              [](const OpRow& x, const OpRow& y) { return std::fabs(x.simulated - x.measured) > std::fabs(y.simulated - y.measured); });
    rows.resize(std::min<std::size_t>(rows.size(), 5));
    c.largest = std::move(rows);
  }
  return c;
}

std::string comparison_text(const Comparison& c) {
  const auto& s = c.simulated;
  const auto& m = c.measured;
  std::string out = fmt::format("shardsim compare: rank {}, step {}, {}\n", c.rank, c.step + 1,
                                c.by_op_id ? fmt::format("ops aligned by id ({} ops)", c.ops_compared) : "aligned by kind (no op ids)");
  out += fmt::format("  simulated  {}  [{}]\n  measured   {}  [{}]\n\n", c.simulated_label, c.simulated_origin, c.measured_label,
                     c.measured_origin);
  out += fmt::format("  {:<30}{:>14}{:>14}{:>11}\n", "", "simulated", "measured", "error");
  auto row = [&](const std::string& what, double a, double b) {
    out += fmt::format("  {:<30}{:>11.3f} ms{:>11.3f} ms{:>11}\n", what, a * 1e3, b * 1e3, percent(relative(a, b)));
  };
  row("step time", s.step_time, m.step_time);
  row("compute busy", s.compute_busy, m.compute_busy);
  row("communication busy", s.comm_busy, m.comm_busy);
  row("exposed communication", s.exposed_comm, m.exposed_comm);
  out += fmt::format("  {:<30}{:>12.1f} %{:>12.1f} %{:>+9.1f} pt\n", "overlap (comm hidden)", 100 * s.overlap, 100 * m.overlap,
                     100 * (s.overlap - m.overlap));
  out += fmt::format("\n  busy time by {:<17}{:>14}{:>14}{:>11}   ops sim/meas\n", c.by_op_id ? "op kind" : "class", "simulated",
                     "measured", "error");
  for (const auto& k : c.kinds) {
    out += fmt::format("    {:<28}{:>11.3f} ms{:>11.3f} ms{:>11}   {}/{}\n", k.kind, k.simulated * 1e3, k.measured * 1e3,
                       percent(relative(k.simulated, k.measured)), k.simulated_count, k.measured_count);
  }
  if (c.by_op_id) {
    out += fmt::format(
        "\n  op durations: {:.1f} % time-weighted error over {} ops; starts differ by {:.3f} ms on average ({:.1f} % of the step)\n",
        100 * c.op_time_error, c.ops_compared, c.mean_start_offset * 1e3, m.step_time > 0 ? 100 * c.mean_start_offset / m.step_time : 0.0);
    out += "  largest differences:\n";
    for (const auto& r : c.largest) {
      out += fmt::format("    op {:<5} {:<32} {:<15}{:>10.3f} ms{:>10.3f} ms{:>11}\n", r.op, r.name, r.kind, r.simulated * 1e3,
                         r.measured * 1e3, percent(relative(r.simulated, r.measured)));
    }
  }
  return out;
}

nlohmann::json comparison_json(const Comparison& c) {
  using nlohmann::json;
  auto metrics = [](const StepMetrics& m) {
    return json{{"step_time_s", m.step_time}, {"compute_busy_s", m.compute_busy},
                {"comm_busy_s", m.comm_busy}, {"exposed_comm_s", m.exposed_comm},
                {"overlap", m.overlap},       {"busy_by_kind_s", m.busy_by_kind}};
  };
  auto err = [](double a, double b) { return b > 0 ? json((a - b) / b) : json(nullptr); };
  json kinds = json::object();
  for (const auto& k : c.kinds) {
    kinds[k.kind] = {{"simulated_s", k.simulated},
                     {"measured_s", k.measured},
                     {"error", err(k.simulated, k.measured)},
                     {"simulated_count", k.simulated_count},
                     {"measured_count", k.measured_count}};
  }
  json j{{"rank", c.rank},
         {"step", c.step},
         {"aligned_by", c.by_op_id ? "op_id" : "kind"},
         {"simulated", {{"file", c.simulated_label}, {"origin", c.simulated_origin}, {"metrics", metrics(c.simulated)}}},
         {"measured", {{"file", c.measured_label}, {"origin", c.measured_origin}, {"metrics", metrics(c.measured)}}},
         {"step_time_error", err(c.simulated.step_time, c.measured.step_time)},
         {"compute_busy_error", err(c.simulated.compute_busy, c.measured.compute_busy)},
         {"comm_busy_error", err(c.simulated.comm_busy, c.measured.comm_busy)},
         {"exposed_comm_error", err(c.simulated.exposed_comm, c.measured.exposed_comm)},
         {"exposed_comm_difference_s", c.simulated.exposed_comm - c.measured.exposed_comm},
         {"overlap_difference", c.simulated.overlap - c.measured.overlap},
         {"kinds", kinds}};
  if (c.by_op_id) {
    json largest = json::array();
    for (const auto& r : c.largest) {
      largest.push_back({{"op", r.op}, {"name", r.name}, {"kind", r.kind}, {"simulated_s", r.simulated}, {"measured_s", r.measured}});
    }
    j["ops"] = {{"compared", c.ops_compared},
                {"time_weighted_error", c.op_time_error},
                {"mean_start_offset_s", c.mean_start_offset},
                {"largest", largest}};
  }
  return j;
}

}  // namespace shardsim::validate
