#include "engine/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <simgrid/kernel/Timer.hpp>

#include "core/error.hpp"
#include "engine/rank_layout.hpp"

namespace shardsim::engine {
namespace sg4 = simgrid::s4u;
using graph::Group;
using graph::OpKind;

// How many predecessors each op waits for.
std::vector<std::int32_t> predecessor_counts(const graph::StepGraph& g) {
  std::vector<std::int32_t> out(g.size());
  for (std::size_t o = 0; o < g.size(); ++o) out[o] = static_cast<std::int32_t>(g.in_degree(static_cast<int>(o)));
  return out;
}

Simulator::Simulator(const SimulationInput& in, int simulated)
    : in_(in),
      g_(in.graph),
      groups_(in.graph.info),
      world_(in.graph.info.world_size),
      simulated_(simulated),
      jobs_(in.jobs),
      total_(simulated * in.jobs),
      // Room for the cohorts there will be at least: every rank (jitter), else one per pipeline stage.
      cohorts_(simulated * in.jobs, predecessor_counts(in.graph),
               in.stragglers.per_rank() || !in.cohorts ? simulated * in.jobs : std::min(simulated * in.jobs, in.graph.info.pp_group),
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
      if (simulated_ < world_) note_simulated_instances(op.group);
      arrived_[o].assign(simulated_ < world_ ? simulated_instances_[static_cast<std::size_t>(op.group)].size()
                                             : static_cast<std::size_t>(groups_.instances(op.group) * jobs_),
                         0);
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
  // The CPU is modelled where it spends time: per kernel, or in FSDP's hooks.
  const double per_kernel = in.topology.host.kernel_dispatch.value();
  std::vector<double> cpu(n);
  for (std::size_t o = 0; o < n; ++o) {
    const graph::Op& op = g_.op(static_cast<int>(o));
    cpu[o] = op.cpu_s + per_kernel * op.kernels_launched();
  }
  if (std::any_of(cpu.begin(), cpu.end(), [](double s) { return s > 0; })) {
    dispatch_ = std::move(cpu);
    dispatched_.assign(static_cast<std::size_t>(g_.info.pp_group), std::vector<double>(n));
    for (int stage = 0; stage < g_.info.pp_group; ++stage) {
      double sum = 0;
      for (std::size_t o = 0; o < n; ++o) {
        if (g_.op(static_cast<int>(o)).runs_on_stage(stage)) sum += dispatch_[o];
        dispatched_[static_cast<std::size_t>(stage)][o] = sum;
      }
    }
  }
  // Ranks start in one cohort per pipeline stage and slow-GPU factor, every one at the fleet's
  // expected pace (engine/variation.hpp); with jitter every rank draws its own times.
  std::vector<double> slow(static_cast<std::size_t>(total_), in.pace);
  for (const auto& s : in.stragglers.slow_gpus) {
    for (int r = 0; r < simulated_; ++r) {
      if (real_rank(r) == s.rank) slow[static_cast<std::size_t>(r)] *= s.factor;
    }
  }
  // GPU-to-GPU variation: each GPU's own log-normal factor for the whole run (a draw apart from
  // every op's jitter: op -1). Jobs draw alike (job j's rank r is the same draw as job 0's).
  if (in.stragglers.gpu_variation > 0) {
    for (int r = 0; r < total_; ++r) {
      slow[static_cast<std::size_t>(r)] *= std::exp(in.stragglers.gpu_variation * normal(in.stragglers.seed, -1, real_rank(r)));
    }
  }
  std::map<std::pair<int, double>, std::vector<int>> alike;
  for (int r = 0; r < total_; ++r) {
    if (in.stragglers.per_rank() || !in.cohorts) {
      cohorts_.add({r}, slow[static_cast<std::size_t>(r)]);
    } else {
      alike[{g_.info.stage_of(real_rank(r)), slow[static_cast<std::size_t>(r)]}].push_back(r);
    }
  }
  for (auto& [kind, members] : alike) cohorts_.add(std::move(members), kind.second);
  holding_.assign(static_cast<std::size_t>(total_), {});
  slowed_ = in.compute.speed_while_communicating();
  cluster_ = cluster_view(in.topology);
  cluster_.busiest_node_only = simulated_ < world_;  // symmetric: the network folds paths so
}

void Simulator::add_routes(Network& network) {
  std::map<Signature, int> signatures;
  signature_of_.assign(g_.size(), -1);
  for (std::size_t o = 0; o < g_.size(); ++o) {
    const graph::Op& op = g_.op(static_cast<int>(o));
    if (!op.is_collective()) continue;
    const auto [it, fresh] = signatures.try_emplace(signature(op), static_cast<int>(signatures.size()));
    signature_of_[o] = it->second;
    if (!fresh) continue;
    signature_group_.push_back(op.group);
    if (over_budget(true)) throw RuntimeError(budget_message("while building routes"));
    if (network.by_path()) planned_.emplace_back(static_cast<std::size_t>(groups_.instances(op.group) * jobs_));
    for (int inst : simulated_instances(op.group)) {
      const CollectivePlan plan = in_.collective.plan(op.kind, physical_members(op, inst), op.bytes, cluster_);
      Network::PathRefs paths = network.add_routes(plan);
      if (network.by_path()) planned_.back()[static_cast<std::size_t>(inst)] = Planned{plan.latency, std::move(paths)};
    }
  }
}

void Simulator::fold(const Network& network) {
  if (!in_.fold || !network.by_path() || simulated_ < world_ || !in_.stragglers.degraded_links.empty()) return;
  const Group g = Group::tp;
  const int instances = groups_.instances(g) * jobs_;
  if (instances < 2) return;
  std::vector<int> sigs;
  for (std::size_t k = 0; k < signature_group_.size(); ++k) {
    if (signature_group_[k] == g) sigs.push_back(static_cast<int>(k));
  }
  for (std::size_t o = 0; o < g_.size(); ++o) {
    const graph::Op& op = g_.op(static_cast<int>(o));
    if (op.group == g && op.stream != graph::Stream::tp) return;  // one collective at a time per instance
  }
  const auto planned = [&](int sig, int inst) -> const Planned& {
    return planned_[static_cast<std::size_t>(sig)][static_cast<std::size_t>(inst)];
  };
  for (int inst = 0; inst < instances; ++inst) {
    std::vector<int> paths;
    for (int sig : sigs) {
      const Planned& mine = planned(sig, inst);
      const Planned& first = planned(sig, 0);
      if (mine.latency != first.latency || mine.paths.size() != first.paths.size()) return;
      for (std::size_t k = 0; k < mine.paths.size(); ++k) {
        if (mine.paths[k].second != first.paths[k].second ||
            network.crossings(mine.paths[k].first) != network.crossings(first.paths[k].first)) {
          return;
        }
        paths.push_back(mine.paths[k].first);
      }
    }
    std::sort(paths.begin(), paths.end());
    paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
    if (!network.isolated(paths)) return;
  }
  foldable_[static_cast<std::size_t>(g)] = true;
}

SimulationResult Simulator::run(const Network& network) {
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

int Simulator::instance_of(Group g, int rank) const {
  return (rank / simulated_) * groups_.instances(g) + groups_.instance_of(g, real_rank(rank));
}

std::vector<int> Simulator::physical_members(const graph::Op& op, int inst) const {
  const Group g = op.group;
  const int job = inst / groups_.instances(g);
  std::vector<int> out = groups_.members(g, inst % groups_.instances(g), op.stage, op.peer_stage);
  for (int& r : out) r = physical_rank(in_, job, r);
  if (op.kind == graph::OpKind::send && g != Group::pp) {
    // Every member sends to the one `shift` places after it: (sender, receiver) pairs, as the
    // send plan reads them. Symmetric mode folds a stage's nodes onto its first: the pairs sent
    // from its other nodes are copies of those sent from the first, whose folded NIC hop stands
    // for the node's traffic both ways, so only the first node's are kept (else each copy would
    // load the folded NIC again: a CP ring's dK/dV sends across 8 nodes took 2.4 x as long).
    const int g_node = in_.topology.node.gpus;
    const int stage_nodes = simulated_ < world_ ? nodes_per_stage(in_) : 0;
    std::vector<int> pairs;
    const std::size_t n = out.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (stage_nodes > 0 && (out[i] / g_node) % stage_nodes != 0) continue;
      pairs.push_back(out[i]);
      pairs.push_back(out[(i + static_cast<std::size_t>(op.shift)) % n]);
    }
    return pairs;
  }
  return out;
}

void Simulator::note_simulated_instances(Group g) {
  auto& mine = simulated_instances_[static_cast<std::size_t>(g)];
  if (!mine.empty()) return;
  for (int r = 0; r < simulated_; ++r) mine.push_back(groups_.instance_of(g, real_rank(r)));
  std::sort(mine.begin(), mine.end());
  auto& expected = expected_[static_cast<std::size_t>(g)];
  for (auto it = mine.begin(); it != mine.end();) {
    const auto next = std::upper_bound(it, mine.end(), *it);
    // Both ends of a pipeline send are stages' representatives; other groups' instances hold
    // as many representatives as arrive at them.
    expected.push_back(g == Group::pp ? groups_.size(g) : static_cast<int>(next - it));
    it = next;
  }
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
}

std::vector<int> Simulator::simulated_instances(Group g) const {
  if (simulated_ < world_) return simulated_instances_[static_cast<std::size_t>(g)];
  std::vector<int> out(static_cast<std::size_t>(groups_.instances(g) * jobs_));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int>(i);
  return out;
}

std::size_t Simulator::slot(Group g, int inst) const {
  if (simulated_ == world_) return static_cast<std::size_t>(inst);
  // Symmetric: the few instances the representatives are in, in order (a handful per kind).
  const std::vector<int>& mine = simulated_instances_[static_cast<std::size_t>(g)];
  return static_cast<std::size_t>(std::lower_bound(mine.begin(), mine.end(), inst) - mine.begin());
}

int Simulator::expected_arrivals(Group g, int inst) const {
  if (simulated_ == world_) return groups_.size(g);
  return expected_[static_cast<std::size_t>(g)][slot(g, inst)];
}

SimulationResult Simulator::result() {
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
  holding_.resize(static_cast<std::size_t>(simulated_));
  // Symmetric with pipeline stages: every rank takes its stage representative's class (the
  // representative of stage s is simulated rank s), so that reports read any rank by its number.
  const bool stages = simulated_ > 1 && simulated_ < world_;
  r.timeline = stages ? cohorts_.take_timeline(world_, cohort_of_class, [this](int rank) { return g_.info.stage_of(rank); })
                      : cohorts_.take_timeline(simulated_, cohort_of_class);
  for (int c : cohort_of_class) {
    r.waiting.push_back(std::move(cohorts_[c].waiting));
    r.waiting_for_cpu.push_back(std::move(cohorts_[c].for_cpu));
  }
  if (stages) {
    r.timeline.set_simulated(simulated_);
    std::vector<std::vector<graph::Interval>> holding(static_cast<std::size_t>(world_));
    for (int s = 0; s < simulated_; ++s) holding[static_cast<std::size_t>(real_rank(s))] = std::move(holding_[static_cast<std::size_t>(s)]);
    holding_ = std::move(holding);
  }
  r.holding = std::move(holding_);
  return r;
}

void Simulator::drain(double now) {
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

const std::vector<int>& Simulator::expanded(CohortRef r) {
  expand_buffer_.clear();
  cohorts_.expand(r, [this](int c) { expand_buffer_.push_back(c); });
  return expand_buffer_;
}

void Simulator::start(int op_id, int c, double now) {
  const graph::Op& op = g_.op(op_id);
  if (op.stage >= 0 && !op.runs_on_stage(stage_of(c))) {  // another pipeline stage's: skipped here
    cohorts_.interval(c, op_id).start = now;
    finish(op_id, c, now);
    return;
  }
  // The GPU ends the op no sooner than the CPU has issued its last kernel.
  const double not_before = issued(op_id, c);
  if (waits_for_cpu(op_id, c, now, not_before)) return;
  if (op.is_collective()) {
    arrive(op_id, c, now);
    return;
  }
  cohorts_.interval(c, op_id).start = now;
  double d = duration_[static_cast<std::size_t>(op_id)];
  if (d <= 0 && not_before <= now) {
    finish(op_id, c, now);
    return;
  }
  if (op.stream != graph::Stream::compute) {
    push_timer(std::max(now + d, not_before), op_id, c, 0);
    return;
  }
  StreamState& s = cohorts_.stream(c);
  d *= s.slow;
  if (in_.stragglers.jitter > 0) d *= std::exp(in_.stragglers.jitter * normal(in_.stragglers.seed, op_id, cohorts_[c].members.front()));
  s.op = op_id;
  s.remaining = d;
  s.since = now;
  s.not_before = not_before;
  const double gpu_end = now + d / speed(s);
  // Its kernels run as the CPU issues them: the GPU waits for the last.
  if (not_before > gpu_end) cohorts_[c].for_cpu.push_back({gpu_end, not_before});
  push_timer(std::max(gpu_end, not_before), op_id, c, ++s.version);
}

double Simulator::issued(int op, int c) const {
  if (dispatch_.empty()) return -1;
  return dispatched_[static_cast<std::size_t>(stage_of(c))][static_cast<std::size_t>(op)] + cohorts_.cpu(c).lag(op);
}

bool Simulator::waits_for_cpu(int op, int c, double now, double last) {
  if (dispatch_.empty()) return false;
  const graph::Op& o = g_.op(op);
  // Its GPU work can start once the first of its kernels is issued, after the CPU's own work on it.
  const double launching = dispatch_[static_cast<std::size_t>(op)] - o.cpu_s;
  const double first = last - launching + launching / std::max(1, o.kernels_launched());
  if (first > now) {
    // Ready with the compute stream idle (it follows the stream's last op): idle for the CPU.
    if (o.stream == graph::Stream::compute) cohorts_[c].for_cpu.push_back({now, first});
    push_timer(first, op, c, 0, true);
    return true;
  }
  if (o.kind == OpKind::cpu_wait) {
    // The CPU was blocked here until now (the event ran): it issues what follows from now on.
    cohorts_.cpu(c).released(op, now - dispatched_[static_cast<std::size_t>(stage_of(c))][static_cast<std::size_t>(op)]);
  }
  return false;
}

void Simulator::collective_changes(int c, int delta, double now) {
  StreamState& s = cohorts_.stream(c);
  const double before = speed(s);
  s.collectives += delta;
  const double after = speed(s);
  if (s.op < 0 || before == after) return;
  s.remaining -= (now - s.since) * before;
  s.since = now;
  push_timer(std::max(now + std::max(0.0, s.remaining) / after, s.not_before), s.op, c, ++s.version);
}

void Simulator::finish(int op_id, int c, double now) {
  cohorts_.interval(c, op_id).end = now;
  stats_.op_instances += cohorts_[c].members.size();
  for (int succ : successors_[static_cast<std::size_t>(op_id)]) {
    if (--cohorts_.remaining(c, succ) == 0) ready_.emplace_back(succ, cohorts_.ref(c));
  }
}

void Simulator::on_completion(sg4::Activity const& a) {
  graveyard_.clear();  // activities finished in earlier callbacks can be released now
  auto* run = a.get_data<Running>();
  if (run == nullptr || --run->flows_left > 0) return;
  if (over_budget(false)) return;  // start nothing more: SimGrid's run ends when the flows drain
  const double now = sg4::Engine::get_clock();
  // NCCL's model adds the latency term to the transfer time.
  schedule_end(run->op, run->instance, now + run->latency);
  for (int f : run->followers) schedule_end(run->op, f, now + run->latency);
  auto it = running_.find(run);
  graveyard_ = std::move(run->comms);
  running_.erase(it);
  arm();
}

void Simulator::on_timer() {
  armed_.erase(armed_.begin());
  const double now = sg4::Engine::get_clock();
  while (!timers_.empty() && timers_.top().time <= now) {
    if (over_budget(false)) return;  // arm no timer: SimGrid's run ends
    const Timer t = timers_.top();
    timers_.pop();
    ++stats_.timer_events;
    if (t.begin) {
      // The CPU has issued the op by now: it starts on every cohort the timer names.
      const CohortRef who{t.who, t.generation};
      if (cohorts_.alone(who)) {
        start(t.op, t.who, t.time);
      } else {
        const std::vector<int> cs = expanded(who);
        for (int c : cs) start(t.op, c, t.time);
      }
    } else if (t.who >= 0) {
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

void Simulator::push_timer(double time, int op, int who, std::uint32_t version, bool begin) {
  timers_.push(Timer{time, seq_++, op, who, cohorts_.count(), version, begin});
}

void Simulator::arm() {
  if (timers_.empty()) return;
  const double next = timers_.top().time;
  if (!armed_.empty() && *armed_.begin() <= next) return;
  armed_.insert(next);
  simgrid::kernel::timer::Timer::set(next, [this] { on_timer(); });
}

bool Simulator::over_budget(bool now) {
  constexpr int kCheckEvery = 256;
  if (stopped_) return true;
  if (!now && ++events_since_check_ < kCheckEvery) return false;
  events_since_check_ = 0;
  stopped_ = in_.deadline.passed();
  return stopped_;
}

std::string Simulator::budget_message(const std::string& where) const {
  const double total = static_cast<double>(g_.size()) * total_;
  return in_.deadline.message(fmt::format("{}, with {} of {:.0f} op instances done ({:.1f} %)", where, stats_.op_instances, total,
                                          total > 0 ? 100.0 * static_cast<double>(stats_.op_instances) / total : 0.0));
}

void Simulator::check_finished() const {
  for (int c = 0; c < cohorts_.count(); ++c) {
    const Cohort& k = cohorts_[c];
    for (std::size_t o = 0; o < g_.size(); ++o) {
      if (cohorts_.interval(c, static_cast<int>(o)).end >= 0) continue;
      const int r = k.members.front();
      throw RuntimeError(fmt::format("the simulation stalled: op \"{}\" never ran on rank {}{} (a dependency that is never met)",
                                     g_.op(static_cast<int>(o)).name, real_rank(r),
                                     jobs_ > 1 ? fmt::format(" of job {}", r / simulated_) : std::string()));
    }
  }
}

std::uint64_t Simulator::key(int op, int inst) {
  return (static_cast<std::uint64_t>(op) << 32) | static_cast<std::uint32_t>(inst);
}

}  // namespace shardsim::engine
