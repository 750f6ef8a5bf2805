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
  int who;                    // rank (compute), or -1 - instance (collective)
  std::uint32_t version = 0;  // compute: stale once the rank's op was rescheduled
  bool operator>(const Timer& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

// What one rank's compute stream is doing, so that its speed can change while a collective runs.
struct RankState {
  int collectives = 0;   // collectives running on this GPU
  int op = -1;           // compute-stream op running, -1 if none
  double remaining = 0;  // its work left, in seconds at full speed
  double since = 0;      // when `remaining` was last brought up to date
  std::uint32_t version = 0;
  double slow = 1;  // stragglers.slow_gpus factor
};

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
        timeline_(in.graph.size(), simulated * in.jobs),
        t0_(std::chrono::steady_clock::now()) {
    const std::size_t n = g_.size();
    successors_.resize(n);
    remaining_.resize(n * static_cast<std::size_t>(total_));
    duration_.resize(n, 0.0);
    arrived_.resize(n);
    for (std::size_t o = 0; o < n; ++o) {
      const int id = static_cast<int>(o);
      for (const auto& [succ, kind] : g_.successors(id)) successors_[o].push_back(succ);
      const auto preds = static_cast<std::int32_t>(g_.in_degree(id));
      std::fill_n(remaining_.begin() + static_cast<std::ptrdiff_t>(o * static_cast<std::size_t>(total_)), total_, preds);
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
    ranks_.resize(static_cast<std::size_t>(total_));
    for (const auto& s : in.stragglers.slow_gpus) {
      if (s.rank < simulated_) ranks_[static_cast<std::size_t>(s.rank)].slow = s.factor;
    }
    waiting_.assign(static_cast<std::size_t>(total_), {});
    holding_.assign(static_cast<std::size_t>(total_), {});
    slowed_ = in.compute.speed_while_communicating();
    cluster_ = cluster_view(in.topology);
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
        for (int r = 0; r < total_; ++r) ready_.emplace_back(static_cast<int>(o), r);
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

  [[nodiscard]] int job_instance(Group g, int job, int inst) const { return job * groups_.instances(g) + inst; }

  // The simulated ranks of a collective instance (those this simulation runs).
  [[nodiscard]] std::vector<int> simulated_members(Group g, int inst) const {
    const int job = inst / groups_.instances(g);
    std::vector<int> out;
    for (int r : groups_.members(g, inst % groups_.instances(g))) {
      if (r < simulated_) out.push_back(job * simulated_ + r);
    }
    return out;
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

  // Job 0's timeline and waits, and when each job ended.
  SimulationResult result() {
    SimulationResult r;
    r.stats = stats_;
    r.job_ends.assign(static_cast<std::size_t>(jobs_), 0.0);
    for (std::size_t o = 0; o < g_.size(); ++o) {
      for (int s = 0; s < total_; ++s) {
        auto& end = r.job_ends[static_cast<std::size_t>(s / simulated_)];
        end = std::max(end, timeline_.at(static_cast<int>(o), s).end);
      }
    }
    if (jobs_ == 1) {
      r.timeline = std::move(timeline_);
    } else {
      r.timeline = graph::Timeline(g_.size(), simulated_);
      for (std::size_t o = 0; o < g_.size(); ++o) {
        for (int s = 0; s < simulated_; ++s) r.timeline.at(static_cast<int>(o), s) = timeline_.at(static_cast<int>(o), s);
      }
    }
    waiting_.resize(static_cast<std::size_t>(simulated_));
    holding_.resize(static_cast<std::size_t>(simulated_));
    r.waiting = std::move(waiting_);
    r.holding = std::move(holding_);
    return r;
  }

  // ---- event handling --------------------------------------------------------------------------

  void drain(double now) {
    while (!ready_.empty()) {
      const auto [op, rank] = ready_.front();
      ready_.pop_front();
      start(op, rank, now);
    }
  }

  void start(int op_id, int rank, double now) {
    const graph::Op& op = g_.op(op_id);
    if (op.is_collective()) {
      const int inst = job_instance(op.group, rank / simulated_, groups_.instance_of(op.group, rank % simulated_));
      arrivals_[{op_id, inst}].emplace_back(rank, now);
      auto& count = arrived_[static_cast<std::size_t>(op_id)][static_cast<std::size_t>(inst)];
      if (++count == expected_arrivals(op.group, inst)) launch(op_id, inst, now);
      return;
    }
    timeline_.at(op_id, rank).start = now;
    double d = duration_[static_cast<std::size_t>(op_id)];
    if (d <= 0) {
      finish(op_id, rank, now);
      return;
    }
    if (op.stream != graph::Stream::compute) {
      push_timer(now + d, op_id, rank);
      return;
    }
    RankState& rs = ranks_[static_cast<std::size_t>(rank)];
    d *= rs.slow;
    if (in_.stragglers.jitter > 0) d *= std::exp(in_.stragglers.jitter * normal(in_.stragglers.seed, op_id, rank));
    rs.op = op_id;
    rs.remaining = d;
    rs.since = now;
    timers_.push(Timer{now + d / speed(rs), seq_++, op_id, rank, ++rs.version});
  }

  [[nodiscard]] double speed(const RankState& rs) const { return rs.collectives > 0 ? slowed_ : 1.0; }

  // A collective starts or ends on `rank`: its compute stream changes speed (NCCL takes SMs and
  // HBM bandwidth), so the running compute op is rescheduled.
  void collective_changes(int rank, int delta, double now) {
    RankState& rs = ranks_[static_cast<std::size_t>(rank)];
    const double before = speed(rs);
    rs.collectives += delta;
    const double after = speed(rs);
    if (rs.op < 0 || before == after) return;
    rs.remaining -= (now - rs.since) * before;
    rs.since = now;
    timers_.push(Timer{now + std::max(0.0, rs.remaining) / after, seq_++, rs.op, rank, ++rs.version});
  }

  // Who waits for whom: every rank waits from its arrival to the launch; the last to arrive held
  // the others up from the first arrival to the launch.
  void account_waits(int op_id, int inst, double now) {
    auto it = arrivals_.find({op_id, inst});
    int last = -1;
    double last_t = -1;
    double first_t = now;
    for (const auto& [rank, t] : it->second) {
      if (t < now) waiting_[static_cast<std::size_t>(rank)].push_back({t, now});
      if (t >= last_t) last = rank, last_t = t;
    }
    for (const auto& [rank, t] : it->second) {
      if (rank != last) first_t = std::min(first_t, t);
    }
    if (last >= 0 && first_t < now) holding_[static_cast<std::size_t>(last)].push_back({first_t, now});
    arrivals_.erase(it);
  }

  // A collective starts once every rank of its group has reached it.
  void launch(int op_id, int inst, double now) {
    const graph::Op& op = g_.op(op_id);
    account_waits(op_id, inst, now);
    for (int r : simulated_members(op.group, inst)) {
      timeline_.at(op_id, r).start = now;
      collective_changes(r, +1, now);
    }
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
      push_timer(now + run->latency, op_id, -1 - inst);
      return;
    }
    run->flows_left = static_cast<int>(run->comms.size());
    stats_.flows += run->comms.size();
    Running* raw = run.get();
    running_.emplace(raw, std::move(run));
    for (auto& c : raw->comms) c->start();
  }

  void finish(int op_id, int rank, double now) {
    timeline_.at(op_id, rank).end = now;
    ++stats_.op_instances;
    for (int succ : successors_[static_cast<std::size_t>(op_id)]) {
      auto& left = remaining_[static_cast<std::size_t>(succ) * static_cast<std::size_t>(total_) + static_cast<std::size_t>(rank)];
      if (--left == 0) ready_.emplace_back(succ, rank);
    }
  }

  void on_completion(sg4::Activity const& a) {
    graveyard_.clear();  // activities finished in earlier callbacks can be released now
    auto* run = a.get_data<Running>();
    if (run == nullptr || --run->flows_left > 0) return;
    if (over_budget(false)) return;  // start nothing more: SimGrid's run ends when the flows drain
    const double now = sg4::Engine::get_clock();
    // NCCL's model adds the latency term to the transfer time.
    push_timer(now + run->latency, run->op, -1 - run->instance);
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
        RankState& rs = ranks_[static_cast<std::size_t>(t.who)];
        if (t.version != 0) {
          if (t.version != rs.version || rs.op != t.op) continue;  // rescheduled since
          rs.op = -1;
        }
        finish(t.op, t.who, t.time);
      } else {
        for (int r : simulated_members(g_.op(t.op).group, -1 - t.who)) {
          collective_changes(r, -1, t.time);
          finish(t.op, r, t.time);
        }
      }
      drain(t.time);
    }
    arm();
  }

  void push_timer(double time, int op, int who) { timers_.push(Timer{time, seq_++, op, who, 0}); }

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
    for (std::size_t o = 0; o < g_.size(); ++o) {
      for (int r = 0; r < total_; ++r) {
        if (timeline_.at(static_cast<int>(o), r).end < 0) {
          throw RuntimeError(fmt::format("the simulation stalled: op \"{}\" never ran on rank {}{} (a dependency that is never met)",
                                         g_.op(static_cast<int>(o)).name, r % simulated_,
                                         jobs_ > 1 ? fmt::format(" of job {}", r / simulated_) : std::string()));
        }
      }
    }
  }

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
  const Network* network_ = nullptr;
  ClusterView cluster_;
  graph::Timeline timeline_;
  EngineStats stats_;
  std::vector<std::vector<int>> successors_;
  std::vector<std::int32_t> remaining_;
  std::vector<double> duration_;
  std::vector<std::vector<int>> arrived_;
  std::map<std::pair<int, int>, std::vector<std::pair<int, double>>> arrivals_;  // (op, instance) -> (rank, when)
  std::vector<RankState> ranks_;
  std::vector<std::vector<graph::Interval>> waiting_;
  std::vector<std::vector<graph::Interval>> holding_;
  double slowed_ = 1.0;  // compute speed while a collective runs
  std::deque<std::pair<int, int>> ready_;
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
  Platform platform(in.topology, symmetric ? 1 : in.nodes * in.jobs, fabrics, symmetric);
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
