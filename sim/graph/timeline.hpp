// When each op of a step graph ran on each rank. Pure data (no SimGrid): the engine returns it,
// the replay harness measures it, the report and compare layers read it.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/step_graph.hpp"

namespace shardsim::graph {

struct Interval {
  double start = -1;  // seconds; -1 if the op never ran on this rank
  double end = -1;
};

class Timeline {
 public:
  Timeline() = default;
  Timeline(std::size_t ops, int world) : world_(world), intervals_(ops * static_cast<std::size_t>(world)) {}

  [[nodiscard]] int world() const { return world_; }
  [[nodiscard]] std::size_t ops() const { return world_ == 0 ? 0 : intervals_.size() / static_cast<std::size_t>(world_); }
  [[nodiscard]] const Interval& at(int op, int rank) const { return intervals_[index(op, rank)]; }
  [[nodiscard]] Interval& at(int op, int rank) { return intervals_[index(op, rank)]; }
  [[nodiscard]] double makespan() const;

 private:
  [[nodiscard]] std::size_t index(int op, int rank) const {
    return static_cast<std::size_t>(op) * static_cast<std::size_t>(world_) + static_cast<std::size_t>(rank);
  }
  int world_ = 0;
  std::vector<Interval> intervals_;
};

}  // namespace shardsim::graph
