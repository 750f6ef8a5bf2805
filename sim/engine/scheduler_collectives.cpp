#include <algorithm>
#include <tuple>

#include "engine/scheduler.hpp"

namespace shardsim::engine {
namespace sg4 = simgrid::s4u;
using graph::Group;
using graph::OpKind;

template <class F>
void Simulator::wholly_inside(const std::vector<Arrival>& who, Group g, const std::vector<int>& insts, F&& f) {
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

void Simulator::arrive(int op_id, int c, double now) {
  const Group g = g_.op(op_id).group;
  const CohortRef ref = cohorts_.ref(c);
  auto& counts = arrived_[static_cast<std::size_t>(op_id)];
  std::vector<int> full;
  for (const auto& [inst, k] : cohorts_.instances(c, g)) {
    const auto [it, fresh] = pending_.try_emplace(key(op_id, inst), 0);
    if (fresh) {
      if (free_arrival_lists_.empty()) {
        it->second = static_cast<int>(arrival_lists_.size());
        arrival_lists_.emplace_back();
      } else {
        it->second = free_arrival_lists_.back();
        free_arrival_lists_.pop_back();
      }
    }
    arrival_lists_[static_cast<std::size_t>(it->second)].push_back(Arrival{ref, now});
    if ((counts[slot(g, inst)] += k) == expected_arrivals(g, inst)) full.push_back(inst);
  }
  if (!full.empty()) launch(op_id, full, now);
}

void Simulator::launch(int op_id, const std::vector<int>& insts, double now) {
  const Group g = g_.op(op_id).group;
  // A receiver waiting for its sender is the pipeline's bubble, not a wait for a slow rank.
  const bool send = g_.op(op_id).kind == OpKind::send && g == Group::pp;
  const bool slows = takes_sms(g_.op(op_id));
  std::vector<Arrival> arrivals;
  for (int inst : insts) {
    const auto pending = pending_.find(key(op_id, inst));
    const int list = pending->second;
    pending_.erase(pending);
    std::vector<Arrival>& reached = arrival_lists_[static_cast<std::size_t>(list)];
    if (!send) account_holding(g, inst, reached, now);
    arrivals.insert(arrivals.end(), reached.begin(), reached.end());
    reached.clear();
    free_arrival_lists_.push_back(list);
  }
  std::vector<CohortRef> launched;
  wholly_inside(arrivals, g, insts, [&](int c, double t) {
    Cohort& k = cohorts_[c];
    if (t < now && !send) k.waiting.push_back({t, now});  // every rank waits from its arrival to the launch
    cohorts_.interval(c, op_id).start = now;
    if (slows) collective_changes(c, +1, now);
    launched.push_back(cohorts_.ref(c));
  });
  const int id = static_cast<int>(launches_.size());
  launches_.push_back(Launch{std::move(launched), static_cast<int>(insts.size())});
  for (int inst : insts) launch_of_[key(op_id, inst)] = id;
  if (foldable_[static_cast<std::size_t>(g)] && insts.size() > 1) {
    start_flows(op_id, insts.front(), now, std::vector<int>(insts.begin() + 1, insts.end()));
  } else {
    for (int inst : insts) start_flows(op_id, inst, now, {});
  }
}

void Simulator::account_holding(Group g, int inst, const std::vector<Arrival>& arrivals, double now) {
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

void Simulator::start_flows(int op_id, int inst, double now, std::vector<int> followers) {
  const graph::Op& op = g_.op(op_id);
  auto run = std::make_unique<Running>();
  run->op = op_id;
  run->instance = inst;
  run->followers = std::move(followers);
  if (network_->by_path()) {
    // The same collective (kind, group instance, size) recurs in every block: plan it once.
    // add_routes planned every collective a simulated rank takes part in.
    const Planned& planned =
        planned_[static_cast<std::size_t>(signature_of_[static_cast<std::size_t>(op_id)])][static_cast<std::size_t>(inst)];
    run->latency = planned.latency;
    run->comms = network_->flows(network_->routes(planned.paths), run.get());
  } else {
    const CollectivePlan plan = in_.collective.plan(op.kind, physical_members(op, inst), op.bytes, cluster_);
    run->latency = plan.latency;
    run->comms = network_->flows(plan, run.get());
  }
  if (run->comms.empty()) {
    schedule_end(op_id, inst, now + run->latency);
    for (int f : run->followers) schedule_end(op_id, f, now + run->latency);
    return;
  }
  run->flows_left = static_cast<int>(run->comms.size());
  stats_.flows += run->comms.size();
  Running* raw = run.get();
  running_.emplace(raw, std::move(run));
  for (auto& c : raw->comms) c->start();
}

void Simulator::schedule_end(int op, int inst, double time) {
  const auto [it, fresh] = pending_endings_.try_emplace({op, time}, static_cast<int>(endings_.size()));
  if (fresh) {
    endings_.push_back(Ending{op, {}});
    push_timer(time, op, -1 - it->second, 0);
  }
  endings_[static_cast<std::size_t>(it->second)].instances.push_back(inst);
}

void Simulator::end(int ending, double now) {
  Ending e = std::move(endings_[static_cast<std::size_t>(ending)]);
  pending_endings_.erase({e.op, now});
  std::sort(e.instances.begin(), e.instances.end());
  std::vector<int> ids;
  const Group g = g_.op(e.op).group;
  for (int inst : e.instances) {
    const auto launch = launch_of_.find(key(e.op, inst));
    ids.push_back(launch->second);
    launch_of_.erase(launch);
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
  const bool slows = takes_sms(g_.op(e.op));
  wholly_inside(who, g, e.instances, [&](int c, double) {
    if (slows) collective_changes(c, -1, now);
    finish(e.op, c, now);
  });
}

}  // namespace shardsim::engine
