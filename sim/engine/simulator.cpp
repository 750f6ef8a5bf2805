#include "engine/simulator.hpp"

#include <fmt/format.h>
#include <xbt/log.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <deque>
#include <map>
#include <tuple>
#include <memory>
#include <queue>
#include <set>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <unordered_map>

#include "core/error.hpp"
#include "graph/groups.hpp"
#include "engine/cohorts.hpp"
#include "engine/network.hpp"
#include "engine/platform.hpp"
#include "engine/rank_layout.hpp"

namespace shardsim::engine {
namespace sg4 = simgrid::s4u;
namespace {

using graph::Group;
using graph::OpKind;

// One running instance of a collective (one group of ranks).
struct Running {
  int op = 0;
  int instance = 0;
  int flows_left = 0;
  double latency = 0;
  std::vector<sg4::CommPtr> comms;
};

struct Timer {
  double time;
  std::uint64_t seq;  // ties resolve in creation order: deterministic
  int op;
  int who;                    // cohort (an op on its streams), or -1 - ending (collective instances ending)
  int generation = 0;         // cohorts when pushed: `who` then (CohortRef)
  std::uint32_t version = 0;  // compute: stale once the cohort's op was rescheduled
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
std::vector<std::int32_t> predecessor_counts(const graph::StepGraph& g) {
  std::vector<std::int32_t> out(g.size());
  for (std::size_t o = 0; o < g.size(); ++o) out[o] = static_cast<std::int32_t>(g.in_degree(static_cast<int>(o)));
  return out;
}

class Simulator {
 public:
  Simulator(const SimulationInput& in, int simulated)
      : in_(in),
        g_(in.graph),
        groups_(in.graph.info),
        world_(in.graph.info.world_size),
        simulated_(simulated),
        jobs_(in.jobs),
        total_(simulated * in.jobs),
        cohorts_(simulated * in.jobs, predecessor_counts(in.graph), in.stragglers.jitter > 0 || !in.cohorts ? simulated * in.jobs : 1,
                 [this](Group g, int rank) { return instance_of(g, rank); }),
        t0_(std::chrono::steady_clock::now()) {
    const std::size_t n = g_.size();
    successors_.resize(n);
    duration_.resize(n, 0.0);
    arrived_.resize(n);
    for (std::size_t o = 0; o < n; ++o) {
      const int id = static_cast<int>(o);
      for (const auto& [succ, kind] : g_.successors(id)) successors_[o].push_back(succ);
      const graph::Op& op = g_.op(id);
      if (op.is_collective()) {
        arrived_[o].assign(static_cast<std::size_t>(groups_.instances(op.group) * jobs_), 0);
      } else if (op.kind != OpKind::cpu_wait) {
        duration_[o] = in.compute.duration(op);
        // An infinite time would never fire and read as a stall; say where it comes from instead.
        if (!std::isfinite(duration_[o]) || duration_[o] < 0) {
          throw RuntimeError(
              fmt::format("op \"{}\" would take {} s: the GPU's figures in the topology (peak_flops, hbm_bandwidth, "
                          "efficiency, kernel_launch) are out of any usable range",
                          op.name, duration_[o]));
        }
      }
    }
    // Ranks start in one cohort per slow-GPU factor; with jitter every rank draws its own times.
    std::vector<double> slow(static_cast<std::size_t>(total_), 1.0);
    for (const auto& s : in.stragglers.slow_gpus) {
      if (s.rank < simulated_) slow[static_cast<std::size_t>(s.rank)] = s.factor;
    }
    std::map<double, std::vector<int>> by_factor;
    for (int r = 0; r < total_; ++r) {
      if (in.stragglers.jitter > 0 || !in.cohorts) {
        cohorts_.add({r}, slow[static_cast<std::size_t>(r)]);
      } else {
        by_factor[slow[static_cast<std::size_t>(r)]].push_back(r);
      }
    }
    for (auto& [factor, members] : by_factor) cohorts_.add(std::move(members), factor);
    holding_.assign(static_cast<std::size_t>(total_), {});
    slowed_ = in.compute.speed_while_communicating();
    cluster_ = cluster_view(in.topology);
    cluster_.busiest_node_only = simulated_ < world_;  // symmetric: the network folds paths so
  }

  // Routes for every collective a simulated rank takes part in (before the platform is sealed).
  void add_routes(Network& network) {
    std::set<std::tuple<int, int, int, double>> seen;
    for (std::size_t o = 0; o < g_.size(); ++o) {
      const graph::Op& op = g_.op(static_cast<int>(o));
      if (!op.is_collective()) continue;
      if (over_budget(true)) throw RuntimeError(budget_message("while building routes"));
      for (int inst : simulated_instances(op.group)) {
        if (!seen.insert({static_cast<int>(op.kind), static_cast<int>(op.group), inst, op.bytes}).second) continue;
        const CollectivePlan plan = in_.collective.plan(op.kind, physical_members(op.group, inst), op.bytes, cluster_);
        Network::PathRefs paths = network.add_routes(plan);
        if (network.by_path()) planned_.emplace(PlanKey{static_cast<int>(op.kind), static_cast<int>(op.group), inst, op.bytes}, Planned{plan.latency, std::move(paths)});
      }
    }
  }

  SimulationResult run(const Network& network) {
    network_ = &network;
    const auto t0 = std::chrono::steady_clock::now();
    sg4::Activity::on_completion_cb([this](sg4::Activity const& a) { on_completion(a); });
    for (std::size_t o = 0; o < g_.size(); ++o) {
      if (g_.in_degree(static_cast<int>(o)) == 0) {
        for (int c = 0; c < cohorts_.count(); ++c) ready_.emplace_back(static_cast<int>(o), cohorts_.ref(c));
      }
    }
    drain(0.0);
    arm();
    sg4::Engine::get_instance()->run();
    if (stopped_) throw RuntimeError(budget_message(fmt::format("at simulated time {:.6g} s", sg4::Engine::get_clock())));
    check_finished();
    stats_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result();
  }

 private:
  // ---- jobs (cluster.jobs) ---------------------------------------------------------------------
  // A simulated rank s is rank s % simulated_ of job s / simulated_ (several jobs only in full
  // mode). A collective instance numbers the instances of every job: job * instances + instance.

  [[nodiscard]] int instance_of(Group g, int rank) const {
    return (rank / simulated_) * groups_.instances(g) + groups_.instance_of(g, rank % simulated_);
  }

  // The GPUs of a collective instance, in ring order, for its plan.
  [[nodiscard]] std::vector<int> physical_members(Group g, int inst) const {
    const int job = inst / groups_.instances(g);
    std::vector<int> out = groups_.members(g, inst % groups_.instances(g));
    for (int& r : out) r = physical_rank(in_, job, r);
    return out;
  }

  // The instances of a group this simulation runs: every one of every job, or the representative
  // rank 0's alone (symmetric mode: thousands of TP groups, one simulated).
  [[nodiscard]] std::vector<int> simulated_instances(Group g) const {
    if (simulated_ < world_) return {groups_.instance_of(g, 0)};
    std::vector<int> out(static_cast<std::size_t>(groups_.instances(g) * jobs_));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int>(i);
    return out;
  }

  // Ranks of the instance that this simulation runs (all, or only the representative rank 0).
  [[nodiscard]] int expected_arrivals(Group g, int inst) const {
    if (simulated_ == world_) return groups_.size(g);
    return groups_.instance_of(g, 0) == inst ? 1 : 0;
  }

  // Job 0's timeline (one class per cohort) and waits, and when each job ended.
  SimulationResult result() {
    SimulationResult r;
    r.stats = stats_;
    r.stats.cohorts = static_cast<std::size_t>(cohorts_.count());
    r.job_ends.assign(static_cast<std::size_t>(jobs_), 0.0);
    for (int c = 0; c < cohorts_.count(); ++c) {
      double end = 0;
      for (std::size_t o = 0; o < g_.size(); ++o) end = std::max(end, cohorts_.interval(c, static_cast<int>(o)).end);
      for (int m : cohorts_[c].members) {
        auto& job_end = r.job_ends[static_cast<std::size_t>(m / simulated_)];
        job_end = std::max(job_end, end);
      }
    }
    std::vector<int> cohort_of_class;
    r.timeline = cohorts_.take_timeline(simulated_, cohort_of_class);
    for (int c : cohort_of_class) r.waiting.push_back(std::move(cohorts_[c].waiting));
    holding_.resize(static_cast<std::size_t>(simulated_));
    r.holding = std::move(holding_);
    return r;
  }

  // ---- event handling --------------------------------------------------------------------------

  void drain(double now) {
    while (!ready_.empty()) {
      const auto [op, who] = ready_.front();
      ready_.pop_front();
      if (cohorts_.alone(who)) {
        start(op, who.id, now);
        continue;
      }
      // Collected first: a cohort split off while starting `op` had already reached it.
      const std::vector<int> cs = expanded(who);
      for (int c : cs) start(op, c, now);
    }
  }

  // The cohort `r` names and those split off it since.
  const std::vector<int>& expanded(CohortRef r) {
    expand_buffer_.clear();
    cohorts_.expand(r, [this](int c) { expand_buffer_.push_back(c); });
    return expand_buffer_;
  }

  void start(int op_id, int c, double now) {
    const graph::Op& op = g_.op(op_id);
    if (op.is_collective()) {
      arrive(op_id, c, now);
      return;
    }
    cohorts_.interval(c, op_id).start = now;
    double d = duration_[static_cast<std::size_t>(op_id)];
    if (d <= 0) {
      finish(op_id, c, now);
      return;
    }
    if (op.stream != graph::Stream::compute) {
      push_timer(now + d, op_id, c, 0);
      return;
    }
    StreamState& s = cohorts_.stream(c);
    d *= s.slow;
    if (in_.stragglers.jitter > 0) d *= std::exp(in_.stragglers.jitter * normal(in_.stragglers.seed, op_id, cohorts_[c].members.front()));
    s.op = op_id;
    s.remaining = d;
    s.since = now;
    push_timer(now + d / speed(s), op_id, c, ++s.version);
  }

  [[nodiscard]] double speed(const StreamState& s) const { return s.collectives > 0 ? slowed_ : 1.0; }

  // A collective starts or ends on a cohort's GPUs: their compute stream changes speed (NCCL takes
  // SMs and HBM bandwidth), so the running compute op is rescheduled.
  void collective_changes(int c, int delta, double now) {
    StreamState& s = cohorts_.stream(c);
    const double before = speed(s);
    s.collectives += delta;
    const double after = speed(s);
    if (s.op < 0 || before == after) return;
    s.remaining -= (now - s.since) * before;
    s.since = now;
    push_timer(now + std::max(0.0, s.remaining) / after, s.op, c, ++s.version);
  }

  // A cohort reaches a collective: each instance its ranks take part in counts them, and those
  // that every rank has now reached start.
  void arrive(int op_id, int c, double now) {
    const Group g = g_.op(op_id).group;
    const CohortRef ref = cohorts_.ref(c);
    auto& counts = arrived_[static_cast<std::size_t>(op_id)];
    std::vector<int> full;
    for (const auto& [inst, k] : cohorts_.instances(c, g)) {
      arrivals_[key(op_id, inst)].push_back(Arrival{ref, now});
      if ((counts[static_cast<std::size_t>(inst)] += k) == expected_arrivals(g, inst)) full.push_back(inst);
    }
    if (!full.empty()) launch(op_id, full, now);
  }

  // The cohorts `who` name, split so that each lies wholly inside `insts` (ascending) of group
  // kind g or wholly outside; calls f(cohort, arrival time) for those inside.
  template <class F>
  void wholly_inside(const std::vector<Arrival>& who, Group g, const std::vector<int>& insts, F&& f) {
    if (seen_.size() < static_cast<std::size_t>(cohorts_.count())) seen_.resize(static_cast<std::size_t>(cohorts_.count()) * 2, 0);
    ++mark_;
    std::vector<std::pair<int, double>> found;
    for (const Arrival& a : who) {
      for (int c : expanded(a.who)) {
        if (seen_[static_cast<std::size_t>(c)] == mark_) continue;
        seen_[static_cast<std::size_t>(c)] = mark_;
        found.emplace_back(c, a.time);
      }
    }
    for (const auto& [c, t] : found) {
      const int inside = cohorts_.members_in(c, g, insts);
      if (inside == 0) continue;
      f(inside < cohorts_[c].size() ? cohorts_.split(c, g, insts) : c, t);
    }
  }

  // Collective instances start once every rank of their groups has reached them.
  void launch(int op_id, const std::vector<int>& insts, double now) {
    const Group g = g_.op(op_id).group;
    std::vector<Arrival> arrivals;
    for (int inst : insts) {
      std::vector<Arrival>& reached = arrivals_[key(op_id, inst)];
      account_holding(g, inst, reached, now);
      for (const Arrival& a : reached) arrivals.push_back(a);
      arrivals_.erase(key(op_id, inst));
    }
    std::vector<CohortRef> launched;
    wholly_inside(arrivals, g, insts, [&](int c, double t) {
      Cohort& k = cohorts_[c];
      if (t < now) k.waiting.push_back({t, now});  // every rank waits from its arrival to the launch
      cohorts_.interval(c, op_id).start = now;
      collective_changes(c, +1, now);
      launched.push_back(cohorts_.ref(c));
    });
    const int id = static_cast<int>(launches_.size());
    launches_.push_back(Launch{std::move(launched), static_cast<int>(insts.size())});
    for (int inst : insts) {
      launch_of_[key(op_id, inst)] = id;
      start_flows(op_id, inst, now);
    }
  }

  // Who held whom up: the last rank to reach an instance held the others from the first arrival
  // to the launch (the highest rank of the last cohort stands for it).
  void account_holding(Group g, int inst, const std::vector<Arrival>& arrivals, double now) {
    if (std::none_of(arrivals.begin(), arrivals.end(), [now](const Arrival& a) { return a.time < now; })) return;
    const std::vector<int> one{inst};
    std::vector<std::tuple<int, double, int>> reached;  // cohort, when, its ranks in the instance
    for (const Arrival& a : arrivals) {
      cohorts_.expand(a.who, [&](int c) {
        if (const int n = cohorts_.members_in(c, g, one); n > 0) reached.emplace_back(c, a.time, n);
      });
    }
    int last = -1;
    double last_t = -1;
    for (const auto& [c, t, n] : reached) {
      if (t >= last_t) last = c, last_t = t;
    }
    double first_t = now;
    for (const auto& [c, t, n] : reached) {
      if (c != last || n > 1) first_t = std::min(first_t, t);
    }
    if (last < 0 || first_t >= now) return;
    const auto& members = cohorts_[last].members;
    for (auto it = members.rbegin(); it != members.rend(); ++it) {
      if (instance_of(g, *it) == inst) {
        holding_[static_cast<std::size_t>(*it)].push_back({first_t, now});
        return;
      }
    }
  }

  void start_flows(int op_id, int inst, double now) {
    const graph::Op& op = g_.op(op_id);
    auto run = std::make_unique<Running>();
    run->op = op_id;
    run->instance = inst;
    if (network_->by_path()) {
      // The same collective (kind, group instance, size) recurs in every block: plan it once.
      // add_routes planned every collective a simulated rank takes part in.
      const Planned& planned = planned_.at(PlanKey{static_cast<int>(op.kind), static_cast<int>(op.group), inst, op.bytes});
      run->latency = planned.latency;
      run->comms = network_->flows(network_->routes(planned.paths), run.get());
    } else {
      const CollectivePlan plan = in_.collective.plan(op.kind, physical_members(op.group, inst), op.bytes, cluster_);
      run->latency = plan.latency;
      run->comms = network_->flows(plan, run.get());
    }
    if (run->comms.empty()) {
      schedule_end(op_id, inst, now + run->latency);
      return;
    }
    run->flows_left = static_cast<int>(run->comms.size());
    stats_.flows += run->comms.size();
    Running* raw = run.get();
    running_.emplace(raw, std::move(run));
    for (auto& c : raw->comms) c->start();
  }

  // Instances of one op ending at one time end together (see Ending).
  void schedule_end(int op, int inst, double time) {
    const auto [it, fresh] = pending_endings_.try_emplace({op, time}, static_cast<int>(endings_.size()));
    if (fresh) {
      endings_.push_back(Ending{op, {}});
      push_timer(time, op, -1 - it->second, 0);
    }
    endings_[static_cast<std::size_t>(it->second)].instances.push_back(inst);
  }

  // Collective instances end: the cohorts that launched them finish the op.
  void end(int ending, double now) {
    Ending e = std::move(endings_[static_cast<std::size_t>(ending)]);
    pending_endings_.erase({e.op, now});
    std::sort(e.instances.begin(), e.instances.end());
    std::vector<int> ids;
    for (int inst : e.instances) {
      ids.push_back(launch_of_[key(e.op, inst)]);
      launch_of_.erase(key(e.op, inst));
    }
    std::sort(ids.begin(), ids.end());
    std::vector<Arrival> who;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      Launch& l = launches_[static_cast<std::size_t>(ids[i])];
      if (i == 0 || ids[i] != ids[i - 1]) {
        for (const CohortRef& r : l.cohorts) who.push_back(Arrival{r, now});
      }
      if (--l.running == 0) l.cohorts = {};  // all its instances ended
    }
    wholly_inside(who, g_.op(e.op).group, e.instances, [&](int c, double) {
      collective_changes(c, -1, now);
      finish(e.op, c, now);
    });
  }

  void finish(int op_id, int c, double now) {
    cohorts_.interval(c, op_id).end = now;
    stats_.op_instances += cohorts_[c].members.size();
    for (int succ : successors_[static_cast<std::size_t>(op_id)]) {
      if (--cohorts_.remaining(c, succ) == 0) ready_.emplace_back(succ, cohorts_.ref(c));
    }
  }

  void on_completion(sg4::Activity const& a) {
    graveyard_.clear();  // activities finished in earlier callbacks can be released now
    auto* run = a.get_data<Running>();
    if (run == nullptr || --run->flows_left > 0) return;
    if (over_budget(false)) return;  // start nothing more: SimGrid's run ends when the flows drain
    const double now = sg4::Engine::get_clock();
    // NCCL's model adds the latency term to the transfer time.
    schedule_end(run->op, run->instance, now + run->latency);
    auto it = running_.find(run);
    graveyard_ = std::move(run->comms);
    running_.erase(it);
    arm();
  }

  void on_timer() {
    armed_.erase(armed_.begin());
    const double now = sg4::Engine::get_clock();
    while (!timers_.empty() && timers_.top().time <= now) {
      if (over_budget(false)) return;  // arm no timer: SimGrid's run ends
      const Timer t = timers_.top();
      timers_.pop();
      ++stats_.timer_events;
      if (t.who >= 0) {
        const CohortRef who{t.who, t.generation};
        const std::vector<int> cs = cohorts_.alone(who) ? std::vector<int>{} : expanded(who);
        const auto ended = [&](int c) {
          StreamState& s = cohorts_.stream(c);
          if (t.version != 0) {
            if (t.version != s.version || s.op != t.op) return;  // rescheduled since
            s.op = -1;
          }
          finish(t.op, c, t.time);
        };
        if (cs.empty()) ended(t.who);
        for (int c : cs) ended(c);
      } else {
        end(-1 - t.who, t.time);
      }
      drain(t.time);
    }
    arm();
  }

  void push_timer(double time, int op, int who, std::uint32_t version) {
    timers_.push(Timer{time, seq_++, op, who, cohorts_.count(), version});
  }

  // Keeps a SimGrid kernel timer set at the earliest pending event, so that SimGrid's clock
  // stops there; an earlier event arms another one (a stale timer finds nothing to do).
  void arm() {
    if (timers_.empty()) return;
    const double next = timers_.top().time;
    if (!armed_.empty() && *armed_.begin() <= next) return;
    armed_.insert(next);
    simgrid::kernel::timer::Timer::set(next, [this] { on_timer(); });
  }

  // ---- the wall-time budget -------------------------------------------------------------------

  // True once the run is past max_wall_seconds. The clock is read every kCheckEvery events (or
  // whenever `now` is set); stopping is sticky. Nothing is thrown from inside SimGrid's callbacks:
  // the handlers stop starting work, SimGrid's run returns, and run() throws.
  bool over_budget(bool now) {
    constexpr int kCheckEvery = 256;
    if (stopped_) return true;
    if (!now && ++events_since_check_ < kCheckEvery) return false;
    events_since_check_ = 0;
    stopped_ = in_.deadline.passed();
    return stopped_;
  }

  std::string budget_message(const std::string& where) const {
    const double total = static_cast<double>(g_.size()) * total_;
    return in_.deadline.message(fmt::format("{}, with {} of {:.0f} op instances done ({:.1f} %)", where, stats_.op_instances, total,
                                            total > 0 ? 100.0 * static_cast<double>(stats_.op_instances) / total : 0.0));
  }

  void check_finished() const {
    for (int c = 0; c < cohorts_.count(); ++c) {
      const Cohort& k = cohorts_[c];
      for (std::size_t o = 0; o < g_.size(); ++o) {
        if (cohorts_.interval(c, static_cast<int>(o)).end >= 0) continue;
        const int r = k.members.front();
        throw RuntimeError(fmt::format("the simulation stalled: op \"{}\" never ran on rank {}{} (a dependency that is never met)",
                                       g_.op(static_cast<int>(o)).name, r % simulated_,
                                       jobs_ > 1 ? fmt::format(" of job {}", r / simulated_) : std::string()));
      }
    }
  }

  [[nodiscard]] static std::uint64_t key(int op, int inst) {
    return (static_cast<std::uint64_t>(op) << 32) | static_cast<std::uint32_t>(inst);
  }

  // The cohorts that launched collective instances, until the last of them ends.
  struct Launch {
    std::vector<CohortRef> cohorts;
    int running = 0;
  };

  const SimulationInput& in_;
  const graph::StepGraph& g_;
  graph::Groups groups_;
  // Path flows of each distinct collective, planned before the run: (kind, group, instance, bytes).
  using PlanKey = std::tuple<int, int, int, double>;
  struct Planned {
    double latency = 0;
    Network::PathRefs paths;
  };
  std::map<PlanKey, Planned> planned_;
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
  std::vector<std::vector<int>> arrived_;                           // per collective op and instance: ranks arrived
  std::unordered_map<std::uint64_t, std::vector<Arrival>> arrivals_;  // (op, instance): not launched yet
  std::vector<Launch> launches_;
  std::unordered_map<std::uint64_t, int> launch_of_;  // (op, instance) running: its launch
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
  std::vector<sg4::CommPtr> graveyard_;
  std::chrono::steady_clock::time_point t0_;
  int events_since_check_ = 0;
  bool stopped_ = false;
};

}  // namespace

SimulationResult simulate(const SimulationInput& in) {
  int argc = 1;
  char name[] = "shardsim";
  char* argv[] = {name, nullptr};
  // SimGrid installs a SIGINT handler that calls exit(1); keep the program's own (main's, which
  // removes half-written output files and ends the process by the signal).
  struct sigaction previous_sigint {};
  ::sigaction(SIGINT, nullptr, &previous_sigint);
  sg4::Engine engine(&argc, argv);
  ::sigaction(SIGINT, &previous_sigint, nullptr);
  xbt_log_control_set("root.thres:critical");
  // CM02: plain max-min sharing without TCP corrections; no reverse ACK traffic; no TCP window
  // cap (shared/reference/simgrid-notes.md). Full updates: selective updates spend their time
  // following constraints through flows that cross thousands of links.
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config("network/optim:Full");
  const bool symmetric = symmetric_mode(in);
  if (symmetric && in.jobs > 1) throw RuntimeError("symmetric mode simulates one job; cluster.jobs > 1 needs full mode");
  FabricRegistry fabrics;
  register_builtin_fabrics(fabrics);
  const bool per_hop = !symmetric && in.flows == FlowGranularity::edge;
  Platform platform(in.topology, symmetric ? 1 : in.nodes * in.jobs, fabrics, symmetric, per_hop);
  for (const auto& d : in.stragglers.degraded_links) platform.degrade(physical_rank(in, 0, static_cast<int>(d.rank)), d.link, d.factor);
  Network network(platform, in.flows, symmetric);
  Simulator sim(in, symmetric ? 1 : in.graph.info.world_size);
  sim.add_routes(network);
  network.build_routes();
  platform.seal();
  SimulationResult result = sim.run(network);
  result.compute_split.resize(in.graph.size());
  for (std::size_t o = 0; o < in.graph.size(); ++o) {
    const graph::Op& op = in.graph.op(static_cast<int>(o));
    if (!op.is_collective()) result.compute_split[o] = in.compute.split(op);
  }
  return result;
}

void check_topology(const config::TopologyConfig& topology) {
  FabricRegistry fabrics;
  register_builtin_fabrics(fabrics);
  (void)fabrics.get(topology.fabric.kind);
  ComputeModelRegistry compute_models;
  register_builtin_compute_models(compute_models);
  (void)compute_models.get(topology.gpu.compute_model);
}

}  // namespace shardsim::engine
