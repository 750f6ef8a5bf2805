// The scheduler behind engine::simulate() (internal to the engine): the step graph's ops run per
// cohort of alike ranks (engine/cohorts.hpp) on the engine's own event queue, collectives as
// SimGrid flows. scheduler.cpp holds the event loop and compute streams,
// scheduler_collectives.cpp the collectives (arrivals, launches, ends, who waited for whom).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <memory_resource>
#include <queue>
#include <set>
#include <simgrid/s4u.hpp>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/cohorts.hpp"
#include "engine/network.hpp"
#include "engine/simulator.hpp"
#include "graph/groups.hpp"

namespace shardsim::engine {

// One running instance of a collective (one group of ranks).
struct Running {
  int op = 0;
  int instance = 0;
  std::vector<int> followers;  // folded instances that end when this one does (see Simulator::fold)
  int flows_left = 0;
  double latency = 0;
  std::vector<simgrid::s4u::CommPtr> comms;
};

struct Timer {
  double time;
  std::uint64_t seq;  // ties resolve in creation order: deterministic
  int op;
  int who;                    // cohort (an op on its streams), or -1 - ending (collective instances ending)
  int generation = 0;         // cohorts when pushed: `who` then (CohortRef)
  std::uint32_t version = 0;  // compute: stale once the cohort's op was rescheduled
  bool begin = false;         // the op starts (it waited for the CPU to issue it), else it ends
  bool operator>(const Timer& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

// A cohort that reached a collective instance, and when.
struct Arrival {
  CohortRef who;
  double time = 0;
};

// Instances of one collective op that end at the same time: handled together, so that a cohort
// whose ranks span them stays whole.
struct Ending {
  int op = 0;
  std::vector<int> instances;
};

// How many predecessors each op waits for.
[[nodiscard]] std::vector<std::int32_t> predecessor_counts(const graph::StepGraph& g);

// Runs a step graph (see simulator.hpp): one instance per simulate() call.
class Simulator {
 public:
  using Group = graph::Group;

  Simulator(const SimulationInput& in, int simulated);

  // Routes for every collective a simulated rank takes part in (before the platform is sealed).
  void add_routes(Network& network);

  // After the routes are built: which group kinds' instances launched together can run as one.
  // Tensor-parallel instances whose paths cross link directions no other path crosses, and cross
  // them alike (same bandwidths, latencies, bytes; no degraded link), each running one
  // collective at a time (one stream), behave identically: one instance's flows stand for all
  // launched with it, which ends them together (2,048 TP groups: one set of flows, not 2,048).
  void fold(const Network& network);

  SimulationResult run(const Network& network);

 private:
  // ---- jobs (cluster.jobs) ---------------------------------------------------------------------
  // A simulated rank s is rank real_rank(s) of job s / simulated_ (several jobs only in full
  // mode). A collective instance numbers the instances of every job: job * instances + instance.
  // In symmetric mode the simulated ranks are the stages' representatives, world / simulated_
  // apart (rank 0 alone without pipelining).
  [[nodiscard]] int real_rank(int s) const { return s % simulated_ * (world_ / simulated_); }

  [[nodiscard]] int instance_of(Group g, int rank) const;

  // The GPUs of an instance of a collective op, in ring order (a send: sender, receiver), for its plan.
  [[nodiscard]] std::vector<int> physical_members(const graph::Op& op, int inst) const;

  // The pipeline stage of a cohort's ranks (cohorts never span stages).
  [[nodiscard]] int stage_of(int cohort) const { return g_.info.stage_of(real_rank(cohorts_[cohort].members.front())); }

  // The instances of a group this simulation runs: every one of every job, or the
  // representatives' alone (symmetric mode: thousands of TP groups, one per stage simulated).
  [[nodiscard]] std::vector<int> simulated_instances(Group g) const;
  void note_simulated_instances(Group g);  // symmetric: fills simulated_instances_ and expected_ for g
  // Where an instance's arrival count is kept: the instance itself (full mode), or its place among
  // the simulated instances (symmetric).
  [[nodiscard]] std::size_t slot(Group g, int inst) const;

  // Ranks of the instance that this simulation runs (all, or only the representative rank 0).
  [[nodiscard]] int expected_arrivals(Group g, int inst) const;

  // Job 0's timeline (one class per cohort) and waits, and when each job ended.
  SimulationResult result();

  // ---- event handling --------------------------------------------------------------------------

  void drain(double now);

  // The cohort `r` names and those split off it since.
  const std::vector<int>& expanded(CohortRef r);

  void start(int op_id, int c, double now);

  // ---- the CPU that issues the ops (host.kernel_dispatch) ----------------------------------------
  // When cohort c's CPU has issued op `op`'s last kernel; -1 when the CPU is not modelled.
  [[nodiscard]] double issued(int op, int c) const;
  // Whether op `op`, ready at `now` on cohort c and issued in full at `issued` (issued()), waits
  // for the CPU to issue its first kernel (then it starts later, from a timer); a CPU wait that
  // passes lets the CPU go on.
  bool waits_for_cpu(int op, int c, double now, double issued);

  [[nodiscard]] double speed(const StreamState& s) const { return s.collectives > 0 ? slowed_ : 1.0; }

  // A collective starts or ends on a cohort's GPUs: their compute stream changes speed (NCCL takes
  // SMs and HBM bandwidth), so the running compute op is rescheduled.
  void collective_changes(int c, int delta, double now);
  // NCCL's kernels run on SMs; async TP's chunk copies (sends within the TP group) run on the copy
  // engines and leave the SMs to the matmuls they overlap.
  [[nodiscard]] static bool takes_sms(const graph::Op& op) { return !(op.kind == graph::OpKind::send && op.group == Group::tp); }

  // A cohort reaches a collective: each instance its ranks take part in counts them, and those
  // that every rank has now reached start.
  void arrive(int op_id, int c, double now);

  // The cohorts `who` name, split so that each lies wholly inside `insts` (ascending) of group
  // kind g or wholly outside; calls f(cohort, arrival time) for those inside.
  template <class F>
  void wholly_inside(const std::vector<Arrival>& who, Group g, const std::vector<int>& insts, F&& f);

  // Collective instances start once every rank of their groups has reached them.
  void launch(int op_id, const std::vector<int>& insts, double now);

  // Who held whom up: the last rank to reach an instance held the others from the first arrival
  // to the launch (the highest rank of the last cohort stands for it).
  void account_holding(Group g, int inst, const std::vector<Arrival>& arrivals, double now);

  void start_flows(int op_id, int inst, double now, std::vector<int> followers);

  // Instances of one op ending at one time end together (see Ending).
  void schedule_end(int op, int inst, double time);

  // Collective instances end: the cohorts that launched them finish the op.
  void end(int ending, double now);

  void finish(int op_id, int c, double now);

  void on_completion(simgrid::s4u::Activity const& a);

  void on_timer();

  void push_timer(double time, int op, int who, std::uint32_t version, bool begin = false);

  // Keeps a SimGrid kernel timer set at the earliest pending event, so that SimGrid's clock
  // stops there; an earlier event arms another one (a stale timer finds nothing to do).
  void arm();

  // ---- the wall-time budget -------------------------------------------------------------------

  // True once the run is past max_wall_seconds. The clock is read every kCheckEvery events (or
  // whenever `now` is set); stopping is sticky. Nothing is thrown from inside SimGrid's callbacks:
  // the handlers stop starting work, SimGrid's run returns, and run() throws.
  bool over_budget(bool now);

  std::string budget_message(const std::string& where) const;

  void check_finished() const;

  [[nodiscard]] static std::uint64_t key(int op, int inst);

  // The cohorts that launched collective instances, until the last of them ends.
  struct Launch {
    std::vector<CohortRef> cohorts;
    int running = 0;
  };

  const SimulationInput& in_;
  const graph::StepGraph& g_;
  graph::Groups groups_;
  // Path flows of each distinct collective, planned before the run. Collective ops with the same
  // kind, group, bytes and (sends) stages or shift share a signature; the same signature and
  // instance (which ranks) recur in every block, planned once.
  using Signature = std::tuple<int, int, double, int, int>;
  [[nodiscard]] static Signature signature(const graph::Op& op) {
    return {static_cast<int>(op.kind), static_cast<int>(op.group), op.bytes, op.stage * 65536 + op.peer_stage, op.shift};
  }
  struct Planned {
    double latency = 0;
    Network::PathRefs paths;
  };
  std::vector<int> signature_of_;                // per op: its signature, -1 for compute ops
  std::vector<Group> signature_group_;           // per signature: its group kind
  std::array<bool, graph::kGroups> foldable_{};  // per group kind (fold())
  std::vector<std::vector<Planned>> planned_;    // per signature, per instance (by_path networks)
  int world_;
  int simulated_;
  int jobs_;
  int total_;  // simulated ranks of all jobs
  Cohorts cohorts_;
  const Network* network_ = nullptr;
  ClusterView cluster_;
  EngineStats stats_;
  std::vector<std::vector<int>> successors_;
  std::vector<double> duration_;
  // host.kernel_dispatch: each op's dispatch seconds, and per pipeline stage their running sum
  // in program order (op id order; ops of other stages add nothing). Empty when not modelled.
  std::vector<double> dispatch_;
  std::vector<std::vector<double>> dispatched_;
  std::vector<std::vector<int>> arrived_;  // per collective op and instance slot: ranks arrived
  // Symmetric mode, per group kind its collectives use: the instances the representatives are in
  // (ascending) and how many ranks arrive at each.
  std::array<std::vector<int>, graph::kGroups> simulated_instances_;
  std::array<std::vector<int>, graph::kGroups> expected_;
  // (op, instance) -> its arrivals in arrival_lists_ until it launches, then its launch in
  // launches_ until it ends. A 16,384-GPU step inserts and erases millions of these: the maps'
  // nodes come from a pool and the lists are reused, where fresh nodes and vectors from malloc
  // were a sixth of its run time.
  std::pmr::unsynchronized_pool_resource node_pool_;
  std::pmr::unordered_map<std::uint64_t, int> pending_{&node_pool_};
  std::pmr::unordered_map<std::uint64_t, int> launch_of_{&node_pool_};
  std::vector<std::vector<Arrival>> arrival_lists_;
  std::vector<int> free_arrival_lists_;  // emptied lists of arrival_lists_, to reuse
  std::vector<Launch> launches_;
  std::vector<Ending> endings_;
  std::map<std::pair<int, double>, int> pending_endings_;  // (op, time) -> ending not handled yet
  std::vector<std::vector<graph::Interval>> holding_;      // per simulated rank
  std::vector<int> expand_buffer_;
  std::vector<std::uint32_t> seen_;  // per cohort: mark_ when visited
  std::uint32_t mark_ = 0;
  double slowed_ = 1.0;  // compute speed while a collective runs
  std::deque<std::pair<int, CohortRef>> ready_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  std::uint64_t seq_ = 0;
  std::multiset<double> armed_;
  std::unordered_map<Running*, std::unique_ptr<Running>> running_;
  std::vector<simgrid::s4u::CommPtr> graveyard_;
  std::chrono::steady_clock::time_point t0_;
  int events_since_check_ = 0;
  bool stopped_ = false;
};

}  // namespace shardsim::engine
