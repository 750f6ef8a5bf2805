#include "engine/collectives/collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <iterator>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/reader.hpp"
#include "engine/collectives/nccl_model.hpp"
#include "engine/collectives/rccl_model.hpp"
#include "graph/groups.hpp"

namespace shardsim::engine::collectives {
namespace {

std::size_t kind_index(graph::OpKind kind) {
  const int i = graph::collective_index(kind);
  assert(i >= 0 && "not a collective");
  return static_cast<std::size_t>(std::max(i, 0));
}

// nccl-tests' bus bandwidth factor: (n-1)/n, 2(n-1)/n for all-reduce.
double busbw_factor(graph::OpKind kind, int n) {
  return (kind == graph::OpKind::all_reduce ? 2.0 : 1.0) * (n - 1) / n;
}

// Point-to-point sends: `ranks` holds (sender, receiver) pairs, one flow each (NVLink inside a
// node, the NICs across nodes) at the link's payload efficiency, as NCCL's Simple protocol, which
// its point-to-point kernels use, and a copy engine both move the payload alone. A pipeline send
// is one pair; an async-TP step is every member of the TP group sending to another. The latency is
// one ring step of that protocol (base latency and one hop's), the pairs moving at once.
CollectivePlan send_plan(std::span<const int> ranks, double bytes, const ClusterView& cluster) {
  CollectivePlan plan;
  assert(ranks.size() % 2 == 0 && !ranks.empty());
  bool across = false;
  std::size_t first = 0;  // a pair across nodes if any: its shape gives the network latency
  for (std::size_t i = 0; i + 1 < ranks.size(); i += 2) {
    if (ranks[i] == ranks[i + 1]) continue;
    const bool same_node = cluster.node_of(ranks[i]) == cluster.node_of(ranks[i + 1]);
    if (!same_node && !across) first = i;
    across = across || !same_node;
    const double efficiency = same_node ? cluster.nvlink.efficiency : cluster.nic.efficiency;
    plan.paths.push_back(Path{{Hop{ranks[i], ranks[i + 1], same_node ? Via::nvlink : Via::nic}}, std::max(bytes, 0.0) / efficiency});
  }
  if (plan.paths.empty()) return plan;
  const GroupShape shape = shape_of(ranks.subspan(first, 2), cluster);
  const auto a = nccl::Algo::ring;
  plan.latency = nccl::base_latency(a, Protocol::simple) +
                 (across ? nccl::net_step_latency(a, Protocol::simple, shape, cluster) : nccl::nvlink_step_latency(a, Protocol::simple));
  return plan;
}

// Calls f(op, ranks, shape) once for each distinct (kind, group, bytes) among the graph's
// collectives, sends aside; the ranks are the group's first instance's (every instance has its
// shape).
template <typename F>
void each_collective(const graph::StepGraph& graph, const ClusterView& cluster, F&& f) {
  const graph::Groups groups(graph.info);
  std::set<std::tuple<graph::OpKind, graph::Group, double>> seen;
  for (std::size_t o = 0; o < graph.size(); ++o) {
    const graph::Op& op = graph.op(static_cast<int>(o));
    if (!op.is_collective() || op.kind == graph::OpKind::send) continue;
    if (!seen.emplace(op.kind, op.group, op.bytes).second) continue;
    const std::vector<int> ranks = groups.members(op.group, 0);
    f(op, ranks, shape_of(ranks, cluster));
  }
}

}  // namespace

Collectives::Collectives(const config::CollectivesConfig& settings, const ClusterView& cluster, AlgorithmRegistry registry)
    : cluster_(cluster), registry_(std::move(registry)), protocol_setting_(settings.protocol) {
  if (settings.protocol.name != "auto") {
    protocol_forced_ = true;
    for (Protocol p : kProtocols) {
      if (to_string(p) == settings.protocol.name) protocol_ = p;
    }
  }
  const std::array<const config::Choice*, 3> per_kind{&settings.all_gather, &settings.reduce_scatter, &settings.all_reduce};
  for (std::size_t k = 0; k < per_kind.size(); ++k) {
    const config::Choice& c = *per_kind[k];
    forced_[k].setting = c;
    if (c.name == "auto") continue;
    constexpr std::array<std::string_view, 1> kAuto{"auto"};
    forced_[k].algorithm = registry_.get(c.name, c.where, c.path, kAuto).get();
    if (protocol_forced_ && !forced_[k].algorithm->has(protocol_)) {
      std::vector<std::string_view> has;
      for (Protocol p : kProtocols) {
        if (forced_[k].algorithm->has(p)) has.push_back(to_string(p));
      }
      throw ConfigError(protocol_setting_.where, protocol_setting_.path,
                        fmt::format("{} has no {} protocol (NCCL runs it with {})", c.name, to_string(protocol_), join(has)));
    }
  }
}

const Collectives::Forced& Collectives::forced(graph::OpKind kind) const {
  return forced_[kind_index(kind)];
}

Selection Collectives::evaluate(const Algorithm& a, Protocol p, graph::OpKind kind, std::span<const int> ranks, const GroupShape& shape,
                                double bytes) const {
  Selection s;
  s.algorithm = &a;
  s.protocol = p;
  s.latency = a.latency(kind, shape, p, cluster_);
  const Efficiency e = a.efficiency(kind, shape, p, cluster_, bytes);
  assert(e.nvlink > 0 && e.nic > 0);
  s.traffic = a.traffic(kind, shape, bytes).scale(1.0 / e.nvlink, 1.0 / e.nic);
  s.transfer = transfer_time(s.traffic, ranks, shape, cluster_);
  const double full_rate = s.transfer * e.nvlink;  // ring and tree: the same factor on both kinds of link
  if (s.transfer > 0) {
    const double busbw = busbw_factor(kind, shape.ranks) * bytes / s.transfer;
    if (busbw > e.busbw_cap) {
      const double k = busbw / e.busbw_cap;
      s.traffic.scale(k, k);
      s.transfer *= k;
    }
  }
  s.tuner = s.time();
  if (cluster_.uses_rccl()) {
    if (const auto algo = rccl::algo_of(a.name())) s.tuner = rccl::estimate(*algo, kind, p, shape, cluster_, bytes, full_rate);
  }
  return s;
}

bool Collectives::tuner_enables(const Algorithm& a, Protocol p, const GroupShape& shape) const {
  if (!cluster_.uses_rccl()) return true;
  const auto algo = rccl::algo_of(a.name());
  return !algo || rccl::enabled(*algo, p, shape, protocol_forced_);
}

std::vector<Selection> Collectives::weigh(graph::OpKind kind, std::span<const int> ranks, const GroupShape& shape, double bytes) const {
  std::vector<Selection> out;
  if (shape.ranks <= 1) return out;
  const Forced& f = forced(kind);
  for (const auto& a : registry_.all()) {
    if (f.algorithm != nullptr ? a.get() != f.algorithm : (!a->in_nccl() || !a->unsupported(kind, shape, cluster_).empty())) continue;
    if (f.algorithm != nullptr) {
      if (std::string why = a->unsupported(kind, shape, cluster_); !why.empty()) {
        std::string message = fmt::format("{} cannot run the {} over {} ranks on {} node(s): {}", a->name(), graph::to_string(kind),
                                          shape.ranks, shape.nodes, why);
        if (f.setting.path == "collectives.algorithm" && kind != graph::OpKind::all_reduce &&
            a->unsupported(graph::OpKind::all_reduce, shape, cluster_).empty()) {
          message += fmt::format(" (to force it for some kinds only: collectives.algorithm: {{all_reduce: {}}})", a->name());
        }
        throw ConfigError(f.setting.where, f.setting.path, message);
      }
    }
    for (Protocol p : kProtocols) {
      if (!a->has(p) || (protocol_forced_ && p != protocol_)) continue;
      if (!tuner_enables(*a, p, shape)) {
        if (f.algorithm != nullptr && protocol_forced_) {  // only RCCL's tree with Simple in a node is refused when forced
          throw ConfigError(protocol_setting_.where, protocol_setting_.path,
                            fmt::format("RCCL runs no {} with the {} protocol within one node of AMD GPUs (gpu.arch cdna3; its "
                                        "src/graph/tuning.cc); expected another protocol, or auto",
                                        a->name(), to_string(p)));
        }
        continue;
      }
      out.push_back(evaluate(*a, p, kind, ranks, shape, bytes));
    }
  }
  return out;
}

Selection Collectives::choose(graph::OpKind kind, std::span<const int> ranks, const GroupShape& shape, double bytes) const {
  const Key key{static_cast<int>(kind), shape.ranks, shape.nodes, shape.per_node, shape.per_nic, bytes};
  if (shape.uniform) {
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  }
  const std::vector<Selection> all = weigh(kind, ranks, shape, bytes);
  if (all.empty()) {
    throw ConfigError(
        protocol_setting_.where, protocol_setting_.path,
        fmt::format("no algorithm runs the {} over {} ranks with protocol {}", graph::to_string(kind), shape.ranks, to_string(protocol_)));
  }
  Selection best = all.front();
  for (const auto& s : all) {
    if (s.tuner < best.tuner) best = s;  // strictly faster: the first of equals stays, as in NCCL
  }
  if (shape.uniform) memo_.emplace(key, best);
  return best;
}

std::vector<Selection> Collectives::candidates(graph::OpKind kind, std::span<const int> ranks, double bytes) const {
  return weigh(kind, ranks, shape_of(ranks, cluster_), bytes);
}

Selection Collectives::select(graph::OpKind kind, std::span<const int> ranks, double bytes) const {
  const GroupShape shape = shape_of(ranks, cluster_);
  if (shape.ranks <= 1) return Selection{};
  return choose(kind, ranks, shape, bytes);
}

CollectivePlan Collectives::plan(graph::OpKind kind, std::span<const int> ranks, double bytes, const ClusterView& cluster) const {
  // The tuner's cluster is the one it was built for; the engine says only how to build paths.
  assert(cluster.gpus_per_node == cluster_.gpus_per_node);
  if (kind == graph::OpKind::send) return send_plan(ranks, bytes, cluster_);
  CollectivePlan plan;
  const GroupShape shape = shape_of(ranks, cluster_);
  if (shape.ranks <= 1) return plan;
  const Selection s = choose(kind, ranks, shape, std::max(bytes, 0.0));
  ClusterView paths_view = cluster_;
  paths_view.busiest_node_only = cluster.busiest_node_only;
  plan.paths = to_paths(s.traffic, ranks, shape, paths_view);
  plan.latency = s.latency;
  return plan;
}

void Collectives::check(const graph::StepGraph& graph) const {
  each_collective(graph, cluster_, [&](const graph::Op& op, const std::vector<int>& ranks, const GroupShape& shape) {
    (void)weigh(op.kind, ranks, shape, 1.0);  // throws for a forced algorithm it cannot run
  });
}

std::vector<graph::CommunicatorUse> Collectives::communicators(const graph::StepGraph& graph) const {
  std::vector<graph::CommunicatorUse> out;
  each_collective(graph, cluster_, [&](const graph::Op& op, const std::vector<int>& ranks, const GroupShape& shape) {
    if (shape.ranks <= 1) return;
    auto use = std::find_if(out.begin(), out.end(), [&](const graph::CommunicatorUse& u) { return u.group == op.group; });
    if (use == out.end()) {
      out.push_back(graph::CommunicatorUse{op.group, shape.uniform ? shape.per_node : 1, shape.nodes});
      use = std::prev(out.end());
    }
    const std::string_view algorithm = choose(op.kind, ranks, shape, std::max(op.bytes, 0.0)).algorithm->name();
    use->ring = use->ring || algorithm == "ring" || algorithm == "hierarchical";
    use->tree = use->tree || algorithm == "tree";
    use->nvls = use->nvls || algorithm == "nvls";
  });
  if (graph.info.pp_group > 1) {  // the stages' sends: rank 0 and its peers in the other stages
    const graph::Groups groups(graph.info);
    std::vector<int> stages;
    for (int s = 0; s < graph.info.pp_group; ++s) stages.push_back(groups.members(graph::Group::pp, 0, s, s).front());
    const GroupShape shape = shape_of(stages, cluster_);
    out.push_back(graph::CommunicatorUse{graph::Group::pp, shape.uniform ? shape.per_node : 1, shape.nodes});
  }
  return out;
}

}  // namespace shardsim::engine::collectives
