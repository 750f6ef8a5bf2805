#include "engine/cohorts.hpp"

#include <algorithm>

namespace shardsim::engine {

int Cohorts::add(std::vector<int> members, const std::vector<std::int32_t>& remaining, std::size_t ops, double slow) {
  const int id = count();
  Cohort& c = cohorts_.emplace_back();
  for (int r : members) of_[static_cast<std::size_t>(r)] = id;
  c.members = std::move(members);
  c.timeline.assign(ops, graph::Interval{});
  c.remaining = remaining;
  c.stream.slow = slow;
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
  Cohort& to = cohorts_.emplace_back();
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
  to.timeline = from.timeline;
  to.remaining = from.remaining;
  to.stream = from.stream;
  to.waiting = from.waiting;
  for (auto& v : from.instances) v.clear();
  from.children.push_back(child);
  return child;
}

graph::Timeline Cohorts::timeline(int ranks, std::size_t ops, std::vector<int>& cohort_of_class) const {
  std::vector<int> class_of(static_cast<std::size_t>(ranks));
  std::vector<int> class_of_cohort(cohorts_.size(), -1);
  cohort_of_class.clear();
  for (int r = 0; r < ranks; ++r) {
    int& cls = class_of_cohort[static_cast<std::size_t>(of(r))];
    if (cls < 0) {
      cls = static_cast<int>(cohort_of_class.size());
      cohort_of_class.push_back(of(r));
    }
    class_of[static_cast<std::size_t>(r)] = cls;
  }
  graph::Timeline t(ops, std::move(class_of), static_cast<int>(cohort_of_class.size()));
  for (std::size_t cls = 0; cls < cohort_of_class.size(); ++cls) {
    const auto& src = (*this)[cohort_of_class[cls]].timeline;
    for (std::size_t o = 0; o < ops; ++o) t.at_class(static_cast<int>(o), static_cast<int>(cls)) = src[o];
  }
  return t;
}

}  // namespace shardsim::engine
