// Cohorts: simulated ranks that have, so far, run every op at the same times (internal to the
// engine). A cohort's ranks share one timeline, one count of unfinished predecessors per op and
// one compute-stream state, so the engine's work per step follows the number of distinct ranks,
// not the number of GPUs: 131,072 ranks of an FSDP job on a uniform fabric are one cohort.
//
// A cohort splits when its ranks stop agreeing: a collective launches or ends for some of its
// ranks and not the others (different group instances), or a setting tells them apart from the
// start (a slow GPU, jitter). The part that leaves gets a copy of everything the cohort held and
// becomes a new cohort; cohorts never merge. Events recorded before a split name the cohort as it
// was then (CohortRef): expand() visits it and every cohort split off it since.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "graph/op.hpp"
#include "graph/timeline.hpp"

namespace shardsim::engine {

// What one cohort's compute stream is doing, so that its speed can change while a collective runs.
struct StreamState {
  int collectives = 0;   // collectives running on these GPUs
  int op = -1;           // compute-stream op running, -1 if none
  double remaining = 0;  // its work left, in seconds at full speed
  double since = 0;      // when `remaining` was last brought up to date
  std::uint32_t version = 0;
  double slow = 1;  // stragglers.slow_gpus factor
  // The running op ends no sooner than this: when the CPU issued its last kernel (host.kernel_dispatch).
  double not_before = 0;
};

// How far a cohort's CPU thread fell behind its dispatch-only clock (host.kernel_dispatch): the
// CPU issues op o at dispatch(o) + lag, dispatch(o) the dispatch seconds of o and every op before
// it in program order, lag the largest (time released - dispatch(w)) over the CPU waits w before
// o that blocked it. By wait, ascending, each with that running largest lag.
struct CpuState {
  std::vector<std::pair<int, double>> lags;
  // The lag of op `op`: the CPU passed every wait before it.
  [[nodiscard]] double lag(int op) const;
  // CPU wait `op` let the CPU go on `lag` behind its dispatch-only clock.
  void released(int op, double lag);
};

struct Cohort {
  std::vector<int> members;              // simulated ranks, ascending
  std::vector<graph::Interval> waiting;  // at collectives, for the group's last rank
  std::vector<graph::Interval> for_cpu;  // the compute stream idle for the CPU to issue (host.kernel_dispatch)
  std::vector<int> children;             // cohorts split off this one, in creation order
  // Per group kind, (instance, members in it) by ascending instance; filled when first asked.
  std::array<std::vector<std::pair<int, int>>, graph::kGroups> instances;
  [[nodiscard]] int size() const { return static_cast<int>(members.size()); }
};

// A cohort as it was when an event was recorded: `generation` is the number of cohorts then.
struct CohortRef {
  int id = 0;
  int generation = 0;
};

class Cohorts {
 public:
  // The collective instance a simulated rank takes part in for a group kind.
  using InstanceOf = std::function<int(graph::Group, int rank)>;
  // `preds`: each op's predecessors, what every cohort starts waiting for; `expected`: how many
  // cohorts to make room for at first.
  Cohorts(int ranks, std::vector<std::int32_t> preds, int expected, InstanceOf instance_of);

  // A cohort of `members` (ascending, in no other cohort), its GPUs slowed by `slow`.
  int add(std::vector<int> members, double slow);

  [[nodiscard]] int count() const { return static_cast<int>(cohorts_.size()); }
  [[nodiscard]] Cohort& operator[](int id) { return cohorts_[static_cast<std::size_t>(id)]; }
  [[nodiscard]] const Cohort& operator[](int id) const { return cohorts_[static_cast<std::size_t>(id)]; }
  [[nodiscard]] int of(int rank) const { return of_[static_cast<std::size_t>(rank)]; }
  // When op `op` ran on cohort `id`, and how many of its predecessors are still to finish there.
  // Both are kept op after op for all cohorts, so that the cohorts finishing one op (often many
  // together) touch neighbouring memory.
  [[nodiscard]] graph::Interval& interval(int id, int op) { return intervals_[cell(id, op)]; }
  [[nodiscard]] const graph::Interval& interval(int id, int op) const { return intervals_[cell(id, op)]; }
  [[nodiscard]] std::int32_t& remaining(int id, int op) { return remaining_[cell(id, op)]; }
  // The cohort's compute stream (kept apart from the rest: read at every timer event).
  [[nodiscard]] StreamState& stream(int id) { return streams_[static_cast<std::size_t>(id)]; }
  [[nodiscard]] CpuState& cpu(int id) { return cpus_[static_cast<std::size_t>(id)]; }
  [[nodiscard]] const CpuState& cpu(int id) const { return cpus_[static_cast<std::size_t>(id)]; }
  [[nodiscard]] CohortRef ref(int id) const { return {id, count()}; }

  // Whether `r` names its cohort alone: nothing split off it since `r` was taken.
  [[nodiscard]] bool alone(CohortRef r) const { return last_child_[static_cast<std::size_t>(r.id)] < r.generation; }

  // Calls f(id) for the cohort `r` names and every cohort split off it after `r` was taken.
  template <class F>
  void expand(CohortRef r, F&& f) const {
    f(r.id);
    if (alone(r)) return;
    for (int child : (*this)[r.id].children) {
      if (child >= r.generation) expand(CohortRef{child, r.generation}, f);
    }
  }

  // The instances of group kind g that cohort `id`'s ranks take part in, with how many of them.
  const std::vector<std::pair<int, int>>& instances(int id, graph::Group g);
  // How many of cohort `id`'s ranks take part in one of `sorted_instances` of g.
  int members_in(int id, graph::Group g, const std::vector<int>& sorted_instances);

  // Moves the ranks of cohort `id` that take part in one of `sorted_instances` of g into a new
  // cohort, which starts as a copy of `id`, and returns it. Both keep at least one rank.
  int split(int id, graph::Group g, const std::vector<int>& sorted_instances);

  // The timeline of `ranks` ranks, one class per cohort holding one of them, and each class's
  // cohort; rank r is simulated rank simulated_of(r) (by default r itself: job 0's ranks; in
  // symmetric mode with pipeline stages, its stage's representative). Takes the cohorts'
  // intervals and counts (the cohorts keep none after), so that they are not held twice.
  [[nodiscard]] graph::Timeline take_timeline(int ranks, std::vector<int>& cohort_of_class,
                                              const std::function<int(int)>& simulated_of = nullptr);

 private:
  [[nodiscard]] std::size_t cell(int id, int op) const {
    return static_cast<std::size_t>(op) * static_cast<std::size_t>(capacity_) + static_cast<std::size_t>(id);
  }
  // Makes room for cohort `id` in the per-op pools (doubling their width).
  void room_for(int id);

  std::size_t ops_;
  std::vector<std::int32_t> preds_;
  int capacity_;                            // cohorts the pools have room for
  std::vector<graph::Interval> intervals_;  // ops x capacity_
  std::vector<std::int32_t> remaining_;     // ops x capacity_
  std::deque<Cohort> cohorts_;              // stable references while cohorts are added
  std::vector<int> last_child_;             // per cohort: the last cohort split off it, -1 if none (kept apart: read per event)
  std::vector<StreamState> streams_;        // per cohort
  std::vector<CpuState> cpus_;              // per cohort
  std::vector<int> of_;                     // per simulated rank
  InstanceOf instance_of_;
};

}  // namespace shardsim::engine
