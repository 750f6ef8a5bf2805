#include "validate/comm_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace shardsim::validate {
namespace {

constexpr const char* kNotRecorded = "(not recorded)";

double steps_of(const RankTrace& r) {
  return static_cast<double>(std::max<std::size_t>(1, r.steps.size()));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The comm activities of each group on a rank, by start.
std::map<std::string, std::vector<const Activity*>> by_group(const Trace& t, const RankTrace& r) {
  std::map<std::string, std::vector<const Activity*>> out;
  for (const Activity& a : r.activities) {
    if (a.step < 0 || a.coll < 0 || !is_comm(a.cls)) continue;
    out[t.collectives[static_cast<std::size_t>(a.coll)].group].push_back(&a);
  }
  return out;
}

}  // namespace

double bus_factor(ActivityClass c, int n) {
  if (n <= 1) return 1.0;
  const double f = static_cast<double>(n - 1) / n;
  switch (c) {
    case ActivityClass::all_reduce:
      return 2 * f;
    case ActivityClass::all_gather:
    case ActivityClass::reduce_scatter:
    case ActivityClass::all_to_all:
      return f;
    default:
      return 1.0;
  }
}

std::vector<GroupRow> group_rows(const Trace& t, std::size_t rank) {
  const RankTrace& r = t.ranks[rank];
  std::map<std::pair<std::string, ActivityClass>, GroupRow> rows;
  for (const Activity& a : r.activities) {
    if (a.step < 0 || !is_comm(a.cls)) continue;
    const Collective* c = a.coll >= 0 ? &t.collectives[static_cast<std::size_t>(a.coll)] : nullptr;
    const std::string group = c != nullptr && !c->group.empty() ? c->group : kNotRecorded;
    GroupRow& row = rows[{group, a.cls}];
    row.group = group;
    row.cls = a.cls;
    if (c != nullptr) row.group_size = c->group_size;
    row.count_per_step += 1;
    row.time_per_step += a.end - a.start;
    row.bytes_per_step += c != nullptr ? c->bytes : 0.0;
  }
  std::vector<GroupRow> out;
  const double steps = steps_of(r);
  for (auto& [key, row] : rows) {
    row.count_per_step /= steps;
    row.time_per_step /= steps;
    row.bytes_per_step /= steps;
    out.push_back(row);
  }
  std::sort(out.begin(), out.end(), [](const GroupRow& a, const GroupRow& b) { return a.time_per_step > b.time_per_step; });
  return out;
}

std::vector<SizeRow> size_rows(const Trace& t, std::size_t rank, const CollectivePredictor& predict) {
  const RankTrace& r = t.ranks[rank];
  std::map<int, SizeRow> rows;  // by collective index
  for (const Activity& a : r.activities) {
    if (a.step < 0 || a.coll < 0) continue;
    const Collective& c = t.collectives[static_cast<std::size_t>(a.coll)];
    if (c.bytes <= 0) continue;
    SizeRow& row = rows[a.coll];
    const double d = a.end - a.start;
    if (row.count == 0) {
      row = SizeRow{c.group.empty() ? kNotRecorded : c.group, c.cls, c.bytes, c.dtype, c.group_size, 0, 0, d, 0, 0, std::nullopt};
      if (predict) row.predicted = predict(c);
    }
    ++row.count;
    row.mean_time += d;
    row.min_time = std::min(row.min_time, d);
  }
  std::vector<SizeRow> out;
  for (auto& [id, row] : rows) {
    row.mean_time /= row.count;
    if (row.mean_time > 0) {
      row.algbw = row.bytes / row.mean_time;
      row.busbw = row.algbw * bus_factor(row.cls, row.group_size);
    }
    out.push_back(row);
  }
  std::sort(out.begin(), out.end(), [](const SizeRow& a, const SizeRow& b) {
    return std::make_tuple(a.group, static_cast<int>(a.cls), a.bytes) < std::make_tuple(b.group, static_cast<int>(b.cls), b.bytes);
  });
  return out;
}

StragglerReport stragglers(const Trace& t) {
  StragglerReport rep;
  if (t.ranks.size() < 2) return rep;
  std::vector<std::map<std::string, std::vector<const Activity*>>> groups;
  for (const RankTrace& r : t.ranks) groups.push_back(by_group(t, r));
  // Matched instances: for each group, the ranks that hold it with the same count.
  struct Instance {
    std::vector<std::pair<std::size_t, const Activity*>> members;  // (rank index, activity)
  };
  std::vector<Instance> instances;
  std::map<std::string, std::vector<std::size_t>> holders;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    for (const auto& [g, acts] : groups[i]) holders[g].push_back(i);
  }
  for (const auto& [g, ranks] : holders) {
    if (ranks.size() < 2) continue;
    const std::size_t count = groups[ranks.front()].at(g).size();
    bool same = true;
    for (std::size_t i : ranks) same = same && groups[i].at(g).size() == count;
    if (!same) {
      rep.notes.push_back(fmt::format("group {}: the ranks hold different numbers of its collectives in the steps kept; not matched", g));
      continue;
    }
    for (std::size_t k = 0; k < count; ++k) {
      Instance inst;
      for (std::size_t i : ranks) inst.members.emplace_back(i, groups[i].at(g)[k]);
      instances.push_back(std::move(inst));
    }
  }
  if (instances.empty()) {
    rep.notes.push_back("no collective recorded with its process group on two ranks: stragglers not found");
    return rep;
  }
  // Clock offsets against the first rank, from end-time differences.
  std::vector<std::vector<double>> diffs(t.ranks.size());
  for (const Instance& inst : instances) {
    const auto ref = std::find_if(inst.members.begin(), inst.members.end(), [](const auto& m) { return m.first == 0; });
    if (ref == inst.members.end()) continue;
    for (const auto& [i, a] : inst.members) diffs[i].push_back(a->end - ref->second->end);
  }
  rep.rows.resize(t.ranks.size());
  for (std::size_t i = 0; i < t.ranks.size(); ++i) {
    rep.rows[i].rank = t.ranks[i].rank;
    rep.rows[i].clock_offset = median(diffs[i]);
  }
  for (const Instance& inst : instances) {
    auto start = [&](const auto& m) { return m.second->start - rep.rows[m.first].clock_offset; };
    const auto last =
        std::max_element(inst.members.begin(), inst.members.end(), [&](const auto& a, const auto& b) { return start(a) < start(b); });
    double second = -1e300;
    for (const auto& m : inst.members) {
      if (&m != &*last) second = std::max(second, start(m));
      rep.rows[m.first].waited += start(*last) - start(m);
    }
    rep.rows[last->first].last += 1;
    rep.rows[last->first].caused += start(*last) - second;
  }
  const double steps = steps_of(t.ranks.front());
  rep.matched = static_cast<double>(instances.size()) / steps;
  for (auto& row : rep.rows) {
    row.last /= steps;
    row.caused /= steps;
    row.waited /= steps;
  }
  return rep;
}

}  // namespace shardsim::validate
