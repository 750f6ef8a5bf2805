#include "graph/timeline.hpp"

#include <algorithm>
#include <numeric>

namespace shardsim::graph {

Timeline::Timeline(std::size_t ops, int world)
    : ops_(ops), classes_(world), class_of_(static_cast<std::size_t>(world)), intervals_(ops * static_cast<std::size_t>(world)) {
  std::iota(class_of_.begin(), class_of_.end(), 0);
}

Timeline::Timeline(std::size_t ops, std::vector<int> class_of, int classes, std::vector<Interval> intervals)
    : ops_(ops), classes_(classes), class_of_(std::move(class_of)), intervals_(std::move(intervals)) {
  if (intervals_.empty()) intervals_.resize(ops * static_cast<std::size_t>(classes));
}

std::vector<int> Timeline::distinct_ranks() const {
  std::vector<char> seen(static_cast<std::size_t>(classes_), 0);
  std::vector<int> out;
  for (int r = 0; r < world(); ++r) {
    auto& s = seen[static_cast<std::size_t>(class_of(r))];
    if (s == 0) out.push_back(r);
    s = 1;
  }
  return out;
}

double Timeline::makespan() const {
  double end = 0;
  for (const auto& i : intervals_) end = std::max(end, i.end);
  return end;
}

}  // namespace shardsim::graph
