#include "engine/simulator.hpp"

#include <fmt/format.h>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <chrono>
#include <deque>
#include <memory>
#include <queue>
#include <set>

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
  int who;            // rank (compute) or instance (collective)
  bool operator>(const Timer& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

class Simulator {
 public:
  explicit Simulator(const SimulationInput& in)
      : in_(in), g_(in.graph), world_(in.graph.info.world_size), timeline_(in.graph.size(), world_) {
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
      }
    }
    cluster_.gpus_per_node = in.topology.node.gpus;
    cluster_.nvlink = in.topology.node.nvlink;
    cluster_.nic = in.topology.node.nic;
    cluster_.switch_latency = in.topology.fabric.switch_latency.value();
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
    check_finished();
    stats_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return SimulationResult{std::move(timeline_), stats_};
  }

 private:
  // ---- groups ----------------------------------------------------------------------------------

  int instances(Group g) const {
    switch (g) {
      case Group::shard: return world_ / g_.info.shard_group;
      case Group::replicate: return g_.info.shard_group;
      case Group::world:
      case Group::none: return 1;
    }
    return 1;
  }
  int instance_of(Group g, int rank) const {
    switch (g) {
      case Group::shard: return rank / g_.info.shard_group;
      case Group::replicate: return rank % g_.info.shard_group;
      default: return 0;
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
      if (++count == static_cast<int>(members(op.group, inst).size())) launch(op_id, inst, now);
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

  void launch(int op_id, int inst, double now) {
    const graph::Op& op = g_.op(op_id);
    const std::vector<int> ranks = members(op.group, inst);
    for (int r : ranks) timeline_.at(op_id, r).start = now;
    CollectivePlan plan = in_.collective.plan(op.kind, ranks, op.bytes, cluster_);
    if (plan.flows.empty()) {
      push_timer(now + plan.latency, op_id, -1 - inst);
      return;
    }
    auto run = std::make_unique<Running>();
    run->op = op_id;
    run->instance = inst;
    run->latency = plan.latency;
    run->flows_left = static_cast<int>(plan.flows.size());
    for (const Flow& f : plan.flows) {
      sg4::CommPtr c = sg4::Comm::sendto_init(platform_->gpu(f.src), platform_->gpu(f.dst));
      c->set_payload_size(f.bytes);
      c->set_data(run.get());
      run->comms.push_back(c);
    }
    stats_.flows += plan.flows.size();
    Running* raw = run.get();
    running_.insert(std::move(run));
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
    const double now = sg4::Engine::get_clock();
    if (dynamic_cast<sg4::Exec const*>(&a) != nullptr) {
      // Timer activities end in time order: this is the earliest armed one.
      armed_.erase(armed_.begin());
      for (auto it = live_timers_.begin(); it != live_timers_.end(); ++it) {
        if (it->get() == &a) {
          graveyard_.push_back(*it);
          live_timers_.erase(it);
          break;
        }
      }
      fire_timers(now);
    } else if (auto* run = a.get_data<Running>(); run != nullptr && --run->flows_left == 0) {
      push_timer(now + run->latency, run->op, -1 - run->instance);
      for (auto it = running_.begin(); it != running_.end(); ++it) {
        if (it->get() == run) {
          for (auto& c : (*it)->comms) graveyard_.push_back(c);
          running_.erase(it);
          break;
        }
      }
    }
    drain(now);
    arm();
  }

  void fire_timers(double now) {
    // SimGrid rounds times to its precision (surf/precision, 1e-9 s): accept timers within it.
    while (!timers_.empty() && timers_.top().time <= now + 1e-9) {
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
  }

  void push_timer(double time, int op, int who) { timers_.push(Timer{time, seq_++, op, who}); }

  // Keeps one SimGrid activity pending at the earliest timer, so that SimGrid's clock stops there.
  void arm() {
    if (timers_.empty()) return;
    const double next = timers_.top().time;
    if (!armed_.empty() && *armed_.begin() <= next) return;
    const double now = sg4::Engine::get_clock();
    armed_.insert(next);
    sg4::ExecPtr e = sg4::Exec::init();
    e->set_flops_amount(std::max(0.0, next - now));
    e->set_host(platform_->clock_host());
    live_timers_.push_back(e);
    e->start();
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
  std::deque<std::pair<int, int>> ready_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  std::uint64_t seq_ = 0;
  std::multiset<double> armed_;
  std::set<std::unique_ptr<Running>> running_;
  std::vector<sg4::ExecPtr> live_timers_;
  std::vector<sg4::ActivityPtr> graveyard_;
};

}  // namespace

SimulationResult simulate(const SimulationInput& in) {
  int argc = 1;
  char name[] = "shardsim";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  xbt_log_control_set("root.thres:critical");
  // CM02: plain max-min sharing without TCP corrections; no reverse ACK traffic; no TCP window cap
  // (shared/reference/simgrid-notes.md).
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  FabricRegistry fabrics;
  register_builtin_fabrics(fabrics);
  Platform platform(in.topology, in.nodes, fabrics);
  Simulator sim(in);
  return sim.run(platform);
}

}  // namespace shardsim::engine
