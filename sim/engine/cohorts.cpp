#include "engine/cohorts.hpp"

#include <algorithm>
#include <iterator>

namespace shardsim::engine {

namespace {

// The first of `lags` past op `op`.
std::size_t after(const std::vector<std::pair<int, double>>& lags, int op) {
  const auto it = std::upper_bound(lags.begin(), lags.end(), op, [](int o, const auto& l) { return o < l.first; });
  return static_cast<std::size_t>(it - lags.begin());
}

}  // namespace

double CpuState::lag(int op) const {
  const std::size_t i = after(lags, op);
  return i == 0 ? 0.0 : lags[i - 1].second;
}

void CpuState::released(int op, double lag) {
  // Waits release in program order (each follows the one before: graph/issuer.hpp); a running
  // largest kept by wait stays right even if one did not.
  const auto at = lags.begin() + static_cast<std::ptrdiff_t>(after(lags, op));
  const double before = at == lags.begin() ? 0.0 : std::prev(at)->second;
  auto it = lags.insert(at, {op, std::max(before, lag)});
  for (auto next = std::next(it); next != lags.end(); ++next) next->second = std::max(next->second, it->second);
}

Cohorts::Cohorts(int ranks, std::vector<std::int32_t> preds, int expected, InstanceOf instance_of)
    : ops_(preds.size()),
      preds_(std::move(preds)),
      capacity_(std::max(expected, 1)),
      intervals_(ops_ * static_cast<std::size_t>(capacity_)),
      remaining_(ops_ * static_cast<std::size_t>(capacity_)),
      of_(static_cast<std::size_t>(ranks), -1),
      instance_of_(std::move(instance_of)) {}

void Cohorts::room_for(int id) {
  if (id < capacity_) return;
  const int wider = std::max(2 * capacity_, id + 1);
  std::vector<graph::Interval> intervals(ops_ * static_cast<std::size_t>(wider));
  std::vector<std::int32_t> remaining(ops_ * static_cast<std::size_t>(wider));
  for (std::size_t o = 0; o < ops_; ++o) {
    const auto from = o * static_cast<std::size_t>(capacity_);
    const auto to = o * static_cast<std::size_t>(wider);
    std::copy_n(intervals_.begin() + static_cast<std::ptrdiff_t>(from), capacity_, intervals.begin() + static_cast<std::ptrdiff_t>(to));
    std::copy_n(remaining_.begin() + static_cast<std::ptrdiff_t>(from), capacity_, remaining.begin() + static_cast<std::ptrdiff_t>(to));
  }
  intervals_ = std::move(intervals);
  remaining_ = std::move(remaining);
  capacity_ = wider;
}

int Cohorts::add(std::vector<int> members, double slow) {
  const int id = count();
  room_for(id);
  Cohort& c = cohorts_.emplace_back();
  last_child_.push_back(-1);
  for (int r : members) of_[static_cast<std::size_t>(r)] = id;
  c.members = std::move(members);
  for (std::size_t o = 0; o < ops_; ++o) {
    interval(id, static_cast<int>(o)) = graph::Interval{};
    remaining(id, static_cast<int>(o)) = preds_[o];
  }
  streams_.push_back(StreamState{});
  streams_.back().slow = slow;
  cpus_.emplace_back();
  return id;
}

const std::vector<std::pair<int, int>>& Cohorts::instances(int id, graph::Group g) {
  Cohort& c = (*this)[id];
  auto& out = c.instances[static_cast<std::size_t>(g)];
  if (!out.empty()) return out;
  std::vector<int> all;
  all.reserve(c.members.size());
  for (int r : c.members) all.push_back(instance_of_(g, r));
  std::sort(all.begin(), all.end());
  for (int inst : all) {
    if (out.empty() || out.back().first != inst) {
      out.emplace_back(inst, 1);
    } else {
      ++out.back().second;
    }
  }
  return out;
}

int Cohorts::members_in(int id, graph::Group g, const std::vector<int>& sorted_instances) {
  const auto& mine = instances(id, g);
  int n = 0;
  // Walk the shorter list, binary-search the longer.
  if (mine.size() <= sorted_instances.size()) {
    for (const auto& [inst, k] : mine) {
      if (std::binary_search(sorted_instances.begin(), sorted_instances.end(), inst)) n += k;
    }
  } else {
    for (int inst : sorted_instances) {
      const auto it = std::lower_bound(mine.begin(), mine.end(), std::make_pair(inst, 0));
      if (it != mine.end() && it->first == inst) n += it->second;
    }
  }
  return n;
}

int Cohorts::split(int id, graph::Group g, const std::vector<int>& sorted_instances) {
  const int child = count();
  room_for(child);
  Cohort& to = cohorts_.emplace_back();
  last_child_.push_back(-1);
  last_child_[static_cast<std::size_t>(id)] = child;
  Cohort& from = (*this)[id];
  std::vector<int> stay;
  for (int r : from.members) {
    if (std::binary_search(sorted_instances.begin(), sorted_instances.end(), instance_of_(g, r))) {
      to.members.push_back(r);
      of_[static_cast<std::size_t>(r)] = child;
    } else {
      stay.push_back(r);
    }
  }
  from.members = std::move(stay);
  for (std::size_t o = 0; o < ops_; ++o) {
    interval(child, static_cast<int>(o)) = interval(id, static_cast<int>(o));
    remaining(child, static_cast<int>(o)) = remaining(id, static_cast<int>(o));
  }
  streams_.push_back(streams_[static_cast<std::size_t>(id)]);
  cpus_.push_back(cpus_[static_cast<std::size_t>(id)]);
  to.waiting = from.waiting;
  to.for_cpu = from.for_cpu;
  for (auto& v : from.instances) v.clear();
  from.children.push_back(child);
  return child;
}

graph::Timeline Cohorts::take_timeline(int ranks, std::vector<int>& cohort_of_class, const std::function<int(int)>& simulated_of) {
  std::vector<int> class_of(static_cast<std::size_t>(ranks));
  std::vector<int> class_of_cohort(cohorts_.size(), -1);
  cohort_of_class.clear();
  for (int r = 0; r < ranks; ++r) {
    const int cohort = of(simulated_of ? simulated_of(r) : r);
    int& cls = class_of_cohort[static_cast<std::size_t>(cohort)];
    if (cls < 0) {
      cls = static_cast<int>(cohort_of_class.size());
      cohort_of_class.push_back(cohort);
    }
    class_of[static_cast<std::size_t>(r)] = cls;
  }
  std::vector<std::int32_t>().swap(remaining_);
  const int classes = static_cast<int>(cohort_of_class.size());
  bool in_place = classes == capacity_;
  for (int cls = 0; cls < classes && in_place; ++cls) in_place = cohort_of_class[static_cast<std::size_t>(cls)] == cls;
  if (in_place) return graph::Timeline(ops_, std::move(class_of), classes, std::move(intervals_));
  std::vector<graph::Interval> intervals(ops_ * static_cast<std::size_t>(classes));
  for (std::size_t o = 0; o < ops_; ++o) {
    for (int cls = 0; cls < classes; ++cls) {
      intervals[o * static_cast<std::size_t>(classes) + static_cast<std::size_t>(cls)] =
          interval(cohort_of_class[static_cast<std::size_t>(cls)], static_cast<int>(o));
    }
  }
  std::vector<graph::Interval>().swap(intervals_);
  return graph::Timeline(ops_, std::move(class_of), classes, std::move(intervals));
}

}  // namespace shardsim::engine
