// The text and JSON of `shardsim compare` (compare.hpp).
#include <fmt/format.h>

#include <cmath>

#include "validate/compare.hpp"

namespace shardsim::validate {
namespace {

using nlohmann::json;

double relative(double sim, double meas) {
  return meas > 0 ? (sim - meas) / meas : std::nan("");
}

std::string percent(double r) {
  return std::isnan(r) ? "     n/a" : fmt::format("{:+7.1f} %", 100 * r);
}

std::string ms(double seconds) {
  return fmt::format("{:.3f} ms", seconds * 1e3);
}

// "1.5 GiB", "64 MiB", "12 KiB", "100 B".
std::string bytes_text(double b) {
  if (b >= 1073741824.0) return fmt::format("{:.4g} GiB", b / 1073741824.0);
  if (b >= 1048576.0) return fmt::format("{:.4g} MiB", b / 1048576.0);
  if (b >= 1024.0) return fmt::format("{:.4g} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

const std::vector<std::string>& compute_kinds() {
  static const std::vector<std::string> k{"gemm", "attention", "other", "memcpy", "memset"};
  return k;
}

void steps_text(const Comparison& c, std::string& out) {
  out += fmt::format("  measured steps ({}): {}\n", c.measured_steps.size(), c.steps_from);
  out += fmt::format("    {:<8}{:>13}{:>13}{:>13}{:>13}{:>13}\n", "step", "time", "compute", "comm", "exposed", "GPU idle");
  for (std::size_t i = 0; i < c.measured_steps.size(); ++i) {
    const StepMetrics& s = c.measured_steps[i];
    out += fmt::format("    {:<8}{:>13}{:>13}{:>13}{:>13}{:>13}{}\n", fmt::format("#{}", s.number), ms(s.step_time), ms(s.compute_busy),
                       ms(s.comm_busy), ms(s.exposed_comm), ms(s.idle), i == c.drawn ? "   (drawn)" : "");
  }
  const Spread& t = c.measured_step_time;
  out += fmt::format("    step time: mean {}, median {}, min {}, max {}, stdev {} ({:.1f} % of the mean)\n", ms(t.mean), ms(t.median),
                     ms(t.min), ms(t.max), ms(t.stdev), t.mean > 0 ? 100 * t.stdev / t.mean : 0.0);
  if (t.n >= 3 && c.measured_steps.front().step_time > 1.5 * t.median) {
    out += fmt::format("    step #{} takes {:.1f}x the median: a warm-up step? leave it out with --warmup 1\n",
                       c.measured_steps.front().number, c.measured_steps.front().step_time / t.median);
  }
  for (const auto& n : c.notes) out += fmt::format("    note: {}\n", n);
}

void measured_text(const Comparison& c, std::string& out) {
  const StepMetrics& m = c.measured;
  // Compute split.
  double compute = 0;
  for (const auto& k : compute_kinds()) compute += m.busy_by_kind.count(k) > 0 ? m.busy_by_kind.at(k) : 0.0;
  out += "\n  compute by kernel kind (measured, per step; sums of kernel times):\n";
  for (const auto& k : compute_kinds()) {
    if (m.busy_by_kind.count(k) == 0) continue;
    out += fmt::format("    {:<28}{:>13}{:>8.1f} %{:>8} kernels\n", k, ms(m.busy_by_kind.at(k)),
                       compute > 0 ? 100 * m.busy_by_kind.at(k) / compute : 0.0, m.count_by_kind.count(k) > 0 ? m.count_by_kind.at(k) : 0);
  }
  if (!c.groups.empty()) {
    out += "\n  communication by process group (measured, per step):\n";
    out += fmt::format("    {:<26}{:<16}{:>6}{:>9}{:>13}{:>13}\n", "group", "collective", "ranks", "count", "time", "bytes");
    for (const auto& g : c.groups) {
      out += fmt::format("    {:<26}{:<16}{:>6}{:>9.1f}{:>13}{:>13}\n", g.group, to_string(g.cls),
                         g.group_size > 0 ? std::to_string(g.group_size) : "?", g.count_per_step, ms(g.time_per_step),
                         g.bytes_per_step > 0 ? bytes_text(g.bytes_per_step) : "?");
    }
  }
  if (!c.sizes.empty()) {
    const bool model = std::any_of(c.sizes.begin(), c.sizes.end(), [](const SizeRow& s) { return s.predicted.has_value(); });
    out += "\n  collectives by size (measured kernel times; busbw as nccl-tests defines it):\n";
    out += fmt::format("    {:<22}{:<15}{:>11}{:>9}{:>6}{:>12}{:>11}{:>11}{}\n", "group", "collective", "size", "dtype", "count",
                       "mean time", "algbw GB/s", "busbw GB/s", model ? "   model time     error" : "");
    for (const auto& s : c.sizes) {
      std::string pred;
      if (s.predicted) pred = fmt::format("{:>13}{:>10}", ms(*s.predicted), percent(relative(*s.predicted, s.mean_time)));
      out += fmt::format("    {:<22}{:<15}{:>11}{:>9}{:>6}{:>12}{:>11.2f}{:>11.2f}{}\n", s.group, to_string(s.cls), bytes_text(s.bytes),
                         s.dtype, s.count, ms(s.mean_time), s.algbw / 1e9, s.busbw / 1e9, pred);
    }
  }
  const StepMetrics& drawn = c.measured_steps[c.drawn];
  if (!drawn.longest_gaps.empty() && drawn.idle > 0) {
    out += fmt::format("\n  GPU idle in step #{}: {} ({:.1f} % of the step; no kernel runs: the CPU is not keeping the GPU busy)\n",
                       drawn.number, ms(drawn.idle), drawn.step_time > 0 ? 100 * drawn.idle / drawn.step_time : 0.0);
    for (const auto& g : drawn.longest_gaps) out += fmt::format("    {} from +{}\n", ms(g.length), ms(g.start));
  }
  if (c.ranks.size() > 1) {
    out += "\n  ranks (measured, per step):\n";
    out += fmt::format("    {:<6}{:>13}{:>11}{:>13}{:>13}{:>13}{:>13}\n", "rank", "step time", "stdev", "compute", "comm", "exposed",
                       "GPU idle");
    for (const auto& r : c.ranks) {
      out += fmt::format("    {:<6}{:>13}{:>11}{:>13}{:>13}{:>13}{:>13}\n", r.rank, ms(r.step_time.mean), ms(r.step_time.stdev),
                         ms(r.mean.compute_busy), ms(r.mean.comm_busy), ms(r.mean.exposed_comm), ms(r.mean.idle));
    }
  }
  if (!c.stragglers.rows.empty()) {
    out += fmt::format("\n  stragglers ({:.1f} collectives per step matched across ranks; clocks aligned on their end times):\n",
                       c.stragglers.matched);
    for (const auto& r : c.stragglers.rows) {
      out += fmt::format("    rank {:<5} last at {:>5.1f} per step, made others wait {} per step, waited {} per step\n", r.rank, r.last,
                         ms(r.caused), ms(r.waited));
    }
  }
  for (const auto& n : c.stragglers.notes) out += fmt::format("    note: {}\n", n);
}

}  // namespace

std::string comparison_text(const Comparison& c) {
  const auto& s = c.simulated;
  const auto& m = c.measured;
  const std::string simulated =
      c.simulated_steps == 1 ? fmt::format("simulated step {}", c.step + 1) : fmt::format("the mean of {} steps", c.simulated_steps);
  std::string out =
      fmt::format("shardsim compare: rank {}{}, {} against {} measured step{} ({})\n", c.rank, c.rank_recorded ? "" : " (assumed)",
                  simulated, c.measured_steps.size(), c.measured_steps.size() == 1 ? "" : "s",
                  c.by_op_id ? fmt::format("ops aligned by id, {} ops", c.ops_compared) : "aligned by kind: no op ids");
  out += fmt::format("  simulated  {}  [{}]\n  measured   {}  [{}]\n", c.simulated_label, c.simulated_origin, c.measured_label,
                     c.measured_origin);
  if (!c.by_op_id) steps_text(c, out);
  out +=
      fmt::format("\n  {:<30}{:>14}{:>14}{:>11}\n", "", "simulated", c.measured_steps.size() > 1 ? "measured mean" : "measured", "error");
  auto row = [&](const std::string& what, double a, double b) {
    out += fmt::format("  {:<30}{:>11.3f} ms{:>11.3f} ms{:>11}\n", what, a * 1e3, b * 1e3, percent(relative(a, b)));
  };
  row("step time", s.step_time, m.step_time);
  row("compute busy", s.compute_busy, m.compute_busy);
  row("communication busy", s.comm_busy, m.comm_busy);
  row("exposed communication", s.exposed_comm, m.exposed_comm);
  row("GPU idle", s.idle, m.idle);
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
  } else {
    measured_text(c, out);
  }
  out += "\n  where simulated and measured differ most (per step):\n";
  for (std::size_t i = 1; i < c.differences.size() && i <= 3; ++i) {
    const Difference& d = c.differences[i];
    out += fmt::format("    {}. {:<26} simulated {}, measured {} ({})\n", i, d.what, ms(d.simulated), ms(d.measured),
                       std::isnan(relative(d.simulated, d.measured)) ? "not measured" : percent(relative(d.simulated, d.measured)));
  }
  return out;
}

json comparison_json(const Comparison& c) {
  auto metrics = [](const StepMetrics& m) {
    json gaps = json::array();
    for (const auto& g : m.longest_gaps) gaps.push_back({{"start_s", g.start}, {"length_s", g.length}});
    return json{{"step", m.number},
                {"step_time_s", m.step_time},
                {"compute_busy_s", m.compute_busy},
                {"comm_busy_s", m.comm_busy},
                {"exposed_comm_s", m.exposed_comm},
                {"overlap", m.overlap},
                {"idle_s", m.idle},
                {"longest_idle_gaps", gaps},
                {"busy_by_kind_s", m.busy_by_kind},
                {"count_by_kind", m.count_by_kind},
                {"busy_by_class_s", m.busy_by_class},
                {"count_by_class", m.count_by_class}};
  };
  auto err = [](double a, double b) { return b > 0 ? json((a - b) / b) : json(nullptr); };
  auto spread_json = [](const Spread& s) {
    return json{{"n", s.n}, {"mean_s", s.mean}, {"median_s", s.median}, {"min_s", s.min}, {"max_s", s.max}, {"stdev_s", s.stdev}};
  };
  json kinds = json::object();
  for (const auto& k : c.kinds) {
    kinds[k.kind] = {{"simulated_s", k.simulated},
                     {"measured_s", k.measured},
                     {"error", err(k.simulated, k.measured)},
                     {"simulated_count", k.simulated_count},
                     {"measured_count", k.measured_count}};
  }
  json steps = json::array();
  for (const auto& s : c.measured_steps) steps.push_back(metrics(s));
  json j{{"rank", c.rank},
         {"rank_recorded", c.rank_recorded},
         {"step", c.step},
         {"aligned_by", c.by_op_id ? "op_id" : "kind"},
         {"simulated", {{"file", c.simulated_label}, {"origin", c.simulated_origin}, {"metrics", metrics(c.simulated)}}},
         {"measured",
          {{"file", c.measured_label},
           {"origin", c.measured_origin},
           {"metrics", metrics(c.measured)},
           {"steps_from", c.steps_from},
           {"notes", c.notes},
           {"steps", steps},
           {"step_time", spread_json(c.measured_step_time)},
           {"drawn_step", c.measured_steps[c.drawn].number}}},
         {"step_time_error", err(c.simulated.step_time, c.measured.step_time)},
         {"compute_busy_error", err(c.simulated.compute_busy, c.measured.compute_busy)},
         {"comm_busy_error", err(c.simulated.comm_busy, c.measured.comm_busy)},
         {"exposed_comm_error", err(c.simulated.exposed_comm, c.measured.exposed_comm)},
         {"exposed_comm_difference_s", c.simulated.exposed_comm - c.measured.exposed_comm},
         {"overlap_difference", c.simulated.overlap - c.measured.overlap},
         {"kinds", kinds}};
  json diffs = json::array();
  for (const auto& d : c.differences) diffs.push_back({{"what", d.what}, {"simulated_s", d.simulated}, {"measured_s", d.measured}});
  j["differences"] = diffs;
  if (c.by_op_id) {
    json largest = json::array();
    for (const auto& r : c.largest) {
      largest.push_back({{"op", r.op}, {"name", r.name}, {"kind", r.kind}, {"simulated_s", r.simulated}, {"measured_s", r.measured}});
    }
    j["ops"] = {{"compared", c.ops_compared},
                {"time_weighted_error", c.op_time_error},
                {"mean_start_offset_s", c.mean_start_offset},
                {"largest", largest}};
    return j;
  }
  json groups = json::array();
  for (const auto& g : c.groups) {
    groups.push_back({{"group", g.group},
                      {"collective", to_string(g.cls)},
                      {"group_size", g.group_size},
                      {"count_per_step", g.count_per_step},
                      {"time_per_step_s", g.time_per_step},
                      {"bytes_per_step", g.bytes_per_step}});
  }
  json sizes = json::array();
  for (const auto& s : c.sizes) {
    json row{{"group", s.group},           {"collective", to_string(s.cls)}, {"bytes", s.bytes},
             {"dtype", s.dtype},           {"group_size", s.group_size},     {"count", s.count},
             {"mean_time_s", s.mean_time}, {"min_time_s", s.min_time},       {"algbw_GBps", s.algbw / 1e9},
             {"busbw_GBps", s.busbw / 1e9}};
    if (s.predicted) {
      row["model_time_s"] = *s.predicted;
      row["model_error"] = err(*s.predicted, s.mean_time);
    }
    sizes.push_back(row);
  }
  json ranks = json::array();
  for (const auto& r : c.ranks) ranks.push_back({{"rank", r.rank}, {"step_time", spread_json(r.step_time)}, {"metrics", metrics(r.mean)}});
  json strag = json::array();
  for (const auto& r : c.stragglers.rows) {
    strag.push_back(
        {{"rank", r.rank}, {"last_per_step", r.last}, {"caused_s", r.caused}, {"waited_s", r.waited}, {"clock_offset_s", r.clock_offset}});
  }
  j["measured"]["groups"] = groups;
  j["measured"]["sizes"] = sizes;
  j["measured"]["ranks"] = ranks;
  j["measured"]["stragglers"] = {{"matched_per_step", c.stragglers.matched}, {"ranks", strag}, {"notes", c.stragglers.notes}};
  return j;
}

}  // namespace shardsim::validate
