#include "engine/simulator.hpp"

#include <fmt/format.h>
#include <xbt/log.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <tuple>
#include <unordered_map>

#include "core/error.hpp"
#include "engine/platform.hpp"

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
  int who;  // rank (compute), or -1 - instance (collective)
  bool operator>(const Timer& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

class Simulator {
 public:
  explicit Simulator(const SimulationInput& in)
      : in_(in), g_(in.graph), world_(in.graph.info.world_size), timeline_(in.graph.size(), world_), t0_(std::chrono::steady_clock::now()) {
    const std::size_t n = g_.size();
    successors_.resize(n);
    remaining_.resize(n * static_cast<std::size_t>(world_));
    duration_.resize(n, 0.0);
    arrived_.resize(n);
    for (std::size_t o = 0; o < n; ++o) {
      const int id = static_cast<int>(o);
      for (const auto& [succ, kind] : g_.successors(id)) successors_[o].push_back(succ);
      const auto preds = static_cast<std::int32_t>(g_.in_degree(id));
      std::fill_n(remaining_.begin() + static_cast<std::ptrdiff_t>(o * static_cast<std::size_t>(world_)), world_, preds);
      const graph::Op& op = g_.op(id);
      if (op.is_collective()) {
        arrived_[o].assign(static_cast<std::size_t>(instances(op.group)), 0);
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
    cluster_.gpus_per_node = in.topology.node.gpus;
    cluster_.nvlink = in.topology.node.nvlink;
    cluster_.nic = in.topology.node.nic;
    cluster_.switch_latency = in.topology.fabric.switch_latency.value();
  }

  // Path flows need a route per path, created before the platform is sealed.
  void add_routes(Platform& platform) {
    if (in_.flows != FlowGranularity::path) return;
    std::map<std::tuple<int, int, int>, bool> seen;
    for (std::size_t o = 0; o < g_.size(); ++o) {
      const graph::Op& op = g_.op(static_cast<int>(o));
      if (!op.is_collective()) continue;
      if (over_budget(true)) throw RuntimeError(budget_message("while building routes"));
      for (int inst = 0; inst < instances(op.group); ++inst) {
        const auto key = std::make_tuple(static_cast<int>(op.kind), static_cast<int>(op.group), inst);
        if (seen.count(key) > 0) continue;
        seen[key] = true;
        const CollectivePlan plan = in_.collective.plan(op.kind, members(op.group, inst), 1.0, cluster_);
        std::vector<int> ids;
        for (const Path& p : plan.paths) ids.push_back(platform.add_path_route(p.hops));
        routes_[key] = std::move(ids);
      }
    }
  }

  SimulationResult run(const Platform& platform) {
    platform_ = &platform;
    const auto t0 = std::chrono::steady_clock::now();
    sg4::Activity::on_completion_cb([this](sg4::Activity const& a) { on_completion(a); });
    for (std::size_t o = 0; o < g_.size(); ++o) {
      if (g_.in_degree(static_cast<int>(o)) == 0) {
        for (int r = 0; r < world_; ++r) ready_.emplace_back(static_cast<int>(o), r);
      }
    }
    drain(0.0);
    arm();
    sg4::Engine::get_instance()->run();
    if (stopped_) throw RuntimeError(budget_message(fmt::format("at simulated time {:.6g} s", sg4::Engine::get_clock())));
    check_finished();
    stats_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return SimulationResult{std::move(timeline_), stats_};
  }

 private:
  // ---- groups ----------------------------------------------------------------------------------

  int group_size(Group g) const {
    switch (g) {
      case Group::shard:
        return g_.info.shard_group;
      case Group::replicate:
        return world_ / g_.info.shard_group;
      default:
        return world_;
    }
  }
  int instances(Group g) const { return world_ / group_size(g); }
  int instance_of(Group g, int rank) const {
    switch (g) {
      case Group::shard:
        return rank / g_.info.shard_group;
      case Group::replicate:
        return rank % g_.info.shard_group;
      default:
        return 0;
    }
  }
  std::vector<int> members(Group g, int instance) const {
    std::vector<int> out;
    switch (g) {
      case Group::shard:
        for (int i = 0; i < g_.info.shard_group; ++i) out.push_back(instance * g_.info.shard_group + i);
        break;
      case Group::replicate:
        for (int r = instance; r < world_; r += g_.info.shard_group) out.push_back(r);
        break;
      default:
        for (int r = 0; r < world_; ++r) out.push_back(r);
    }
    return out;
  }

  // ---- event handling --------------------------------------------------------------------------

  // Processes every (op, rank) that became ready at time `now`.
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
      const int inst = instance_of(op.group, rank);
      auto& count = arrived_[static_cast<std::size_t>(op_id)][static_cast<std::size_t>(inst)];
      if (++count == group_size(op.group)) launch(op_id, inst, now);
      return;
    }
    timeline_.at(op_id, rank).start = now;
    const double d = duration_[static_cast<std::size_t>(op_id)];
    if (d <= 0) {
      finish(op_id, rank, now);
      return;
    }
    push_timer(now + d, op_id, rank);
  }

  // A collective starts once every rank of its group has reached it.
  void launch(int op_id, int inst, double now) {
    const graph::Op& op = g_.op(op_id);
    const std::vector<int> ranks = members(op.group, inst);
    for (int r : ranks) timeline_.at(op_id, r).start = now;
    const CollectivePlan plan = in_.collective.plan(op.kind, ranks, op.bytes, cluster_);
    auto run = std::make_unique<Running>();
    run->op = op_id;
    run->instance = inst;
    run->latency = plan.latency;
    auto flow = [&](sg4::Host* src, sg4::Host* dst, double bytes) {
      sg4::CommPtr c = sg4::Comm::sendto_init(src, dst);
      c->set_payload_size(bytes);
      c->set_data(run.get());
      run->comms.push_back(c);
    };
    if (in_.flows == FlowGranularity::path) {
      const auto& ids = routes_.at(std::make_tuple(static_cast<int>(op.kind), static_cast<int>(op.group), inst));
      for (std::size_t i = 0; i < plan.paths.size(); ++i) {
        if (plan.paths[i].bytes > 0) flow(platform_->path_src(ids[i]), platform_->path_dst(ids[i]), plan.paths[i].bytes);
      }
    } else {
      for (const Path& p : plan.paths) {
        for (const Hop& h : p.hops) {
          if (p.bytes > 0) flow(platform_->gpu(h.src), platform_->gpu(h.dst), p.bytes);
        }
      }
    }
    if (run->comms.empty()) {
      push_timer(now + plan.latency, op_id, -1 - inst);
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
      auto& left = remaining_[static_cast<std::size_t>(succ) * static_cast<std::size_t>(world_) + static_cast<std::size_t>(rank)];
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
    graveyard_ = std::move(it->second->comms);
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
        finish(t.op, t.who, t.time);
      } else {
        for (int r : members(g_.op(t.op).group, -1 - t.who)) finish(t.op, r, t.time);
      }
      drain(t.time);
    }
    arm();
  }

  void push_timer(double time, int op, int who) { timers_.push(Timer{time, seq_++, op, who}); }

  // Keeps a SimGrid kernel timer set at the earliest pending event, so that SimGrid's clock
  // stops there; an earlier event arms another one (a stale timer finds nothing to do).
  void arm() {
    if (timers_.empty()) return;
    const double next = timers_.top().time;
    if (!armed_.empty() && *armed_.begin() <= next) return;
    armed_.insert(next);
    simgrid::kernel::timer::Timer::set(next, [this] { on_timer(); });
  }

  // ---- the wall-time budget -----------------------------------------------------------------------

  // True once the run is past max_wall_seconds. The clock is read every kCheckEvery events (or
  // whenever `now` is set); stopping is sticky. Nothing is thrown from inside SimGrid's callbacks:
  // the handlers stop starting work, SimGrid's run returns, and run() throws.
  bool over_budget(bool now) {
    constexpr int kCheckEvery = 256;
    if (stopped_) return true;
    if (!now && ++events_since_check_ < kCheckEvery) return false;
    events_since_check_ = 0;
    stopped_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count() > in_.max_wall_seconds;
    return stopped_;
  }

  std::string budget_message(const std::string& where) const {
    const double total = static_cast<double>(g_.size()) * world_;
    return fmt::format(
        "the simulation ran past its wall-time budget (simulation.max_wall_time = {:g} s): stopped after {:.1f} s {}, with {} of {:.0f} "
        "op instances done ({:.1f} %); raise simulation.max_wall_time, or simulate fewer ranks, layers or steps",
        in_.max_wall_seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(), where, stats_.op_instances,
        total, total > 0 ? 100.0 * static_cast<double>(stats_.op_instances) / total : 0.0);
  }

  void check_finished() const {
    for (std::size_t o = 0; o < g_.size(); ++o) {
      for (int r = 0; r < world_; ++r) {
        if (timeline_.at(static_cast<int>(o), r).end < 0) {
          throw RuntimeError(fmt::format("the simulation stalled: op \"{}\" never ran on rank {} (a dependency that is never met)",
                                         g_.op(static_cast<int>(o)).name, r));
        }
      }
    }
  }

  const SimulationInput& in_;
  const graph::StepGraph& g_;
  int world_;
  const Platform* platform_ = nullptr;
  ClusterView cluster_;
  Timeline timeline_;
  EngineStats stats_;
  std::vector<std::vector<int>> successors_;
  std::vector<std::int32_t> remaining_;
  std::vector<double> duration_;
  std::vector<std::vector<int>> arrived_;
  std::map<std::tuple<int, int, int>, std::vector<int>> routes_;  // (kind, group, instance) -> path routes
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
  // CM02: plain max-min sharing without TCP corrections; no reverse ACK traffic; no TCP window cap
  // (shared/reference/simgrid-notes.md).
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config("network/optim:Full");
  FabricRegistry fabrics;
  register_builtin_fabrics(fabrics);
  Platform platform(in.topology, in.nodes, fabrics);
  Simulator sim(in);
  sim.add_routes(platform);
  platform.seal();
  return sim.run(platform);
}

void check_topology(const config::TopologyConfig& topology) {
  FabricRegistry fabrics;
  register_builtin_fabrics(fabrics);
  (void)fabrics.find(topology.fabric.kind);
}

}  // namespace shardsim::engine
