// When each op of a step graph ran on each rank. Pure data (no SimGrid): the engine returns it,
// the replay harness measures it, the report and compare layers read it.
//
// Ranks that ran every op at the same times share one class and its intervals: the engine
// simulates such ranks together (engine/cohorts.hpp), so 131,072 identical ranks cost one rank's
// timeline. A timeline built with only a world size gives every rank its own class.
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
  // One class per rank.
  Timeline(std::size_t ops, int world);
  // class_of[rank] < classes for every rank; `intervals` (if given) holds ops x classes intervals,
  // op after op: intervals[op * classes + class].
  Timeline(std::size_t ops, std::vector<int> class_of, int classes, std::vector<Interval> intervals = {});

  [[nodiscard]] int world() const { return static_cast<int>(class_of_.size()); }
  // How many of the ranks were simulated (symmetric mode with pipeline stages: one per stage,
  // the others given its class); the world unless said.
  [[nodiscard]] int simulated() const { return simulated_ < 0 ? world() : simulated_; }
  void set_simulated(int ranks) { simulated_ = ranks; }
  [[nodiscard]] std::size_t ops() const { return ops_; }
  [[nodiscard]] int classes() const { return classes_; }
  [[nodiscard]] int class_of(int rank) const { return class_of_[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] const Interval& at(int op, int rank) const { return intervals_[index(op, class_of(rank))]; }
  // Writes the interval of the rank's whole class.
  [[nodiscard]] Interval& at(int op, int rank) { return intervals_[index(op, class_of(rank))]; }
  [[nodiscard]] const Interval& at_class(int op, int cls) const { return intervals_[index(op, cls)]; }
  [[nodiscard]] Interval& at_class(int op, int cls) { return intervals_[index(op, cls)]; }
  // The first rank of each class, in rank order: the ranks whose timelines differ.
  [[nodiscard]] std::vector<int> distinct_ranks() const;
  [[nodiscard]] double makespan() const;

 private:
  [[nodiscard]] std::size_t index(int op, int cls) const {
    return static_cast<std::size_t>(op) * static_cast<std::size_t>(classes_) + static_cast<std::size_t>(cls);
  }
  std::size_t ops_ = 0;
  int classes_ = 0;
  std::vector<int> class_of_;
  std::vector<Interval> intervals_;
  int simulated_ = -1;
};

}  // namespace shardsim::graph
