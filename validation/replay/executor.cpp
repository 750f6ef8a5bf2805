#include "replay/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <thread>

#include "core/error.hpp"
#include "graph/groups.hpp"

namespace shardsim::replay {
namespace {

using graph::Group;
using graph::OpKind;

std::string describe(const graph::Op& op) {
  return fmt::format("op {} \"{}\" ({}, stream {})", op.id, op.name, graph::to_string(op.kind), graph::to_string(op.stream));
}

// A communicator: the op's stream and group, and for the pipeline's group the ordered pair of
// stages it joins (sender first), so that a send's sender is its communicator's first member.
struct CommKey {
  graph::Stream stream;
  Group group;
  int from = -1;
  int to = -1;
  auto operator<=>(const CommKey&) const = default;
};

CommKey comm_key(const graph::Op& op) {
  if (op.group != Group::pp) return {op.stream, op.group};
  return {op.stream, op.group, op.stage, op.peer_stage};
}

// Issues the step once; returns the events bracketing each op and t0. With pipeline stages each
// rank runs its stage's program: the ops of its stage, and the sends it is one end of.
class Issuer {
 public:
  Issuer(const graph::StepGraph& g, Backend& b, Watchdog& w) : g_(g), b_(b), w_(w), stage_(g.info.stage_of(b.rank())) {
    const std::size_t n = g.size();
    const graph::Groups groups(g.info);
    // Streams and communicators, in graph order: the same order on every rank. A pipeline
    // pair's communicator is split on every rank too; the ranks of other stages join none.
    for (std::size_t i = 0; i < n; ++i) {
      const graph::Op& op = g.op(static_cast<int>(i));
      if (op.kind == OpKind::cpu_wait) continue;
      if (streams_.count(op.stream) == 0) streams_[op.stream] = b.create_stream(std::string(graph::to_string(op.stream)));
      const CommKey key = comm_key(op);
      if (!op.is_collective() || comms_.count(key) != 0) continue;
      if (op.group == Group::pp) {
        const bool member = stage_ == op.stage || stage_ == op.peer_stage;
        comms_[key] = b.split_communicator(member ? groups.instance_of(Group::pp, b.rank()) : -1, stage_ == op.stage ? 0 : 1);
      } else {
        comms_[key] = b.split_communicator(groups.instance_of(op.group, b.rank()), b.rank());
      }
    }
    if (streams_.count(graph::Stream::compute) == 0) streams_[graph::Stream::compute] = b.create_stream("compute");
    world_comm_ = b.split_communicator(0, b.rank());
    // Buffers, before any work: an out-of-memory device fails here, with the sizes.
    std::map<graph::Stream, KernelFootprint> footprint;
    std::map<graph::Stream, double> coll_bytes;
    for (std::size_t i = 0; i < n; ++i) {
      const graph::Op& op = g.op(static_cast<int>(i));
      if (!runs_here(op)) {
        kernels_.emplace_back();
        continue;
      }
      if (op.is_collective()) {
        coll_bytes[op.stream] = std::max(coll_bytes[op.stream], op.bytes);
      } else if (op.kind != OpKind::cpu_wait) {
        kernels_.push_back(compute_kernels(op.work));
        for (const auto& k : kernels_.back()) footprint[op.stream].add(k);
        continue;
      }
      kernels_.emplace_back();
    }
    for (const auto& [s, id] : streams_) b.reserve(id, footprint[s], std::max(coll_bytes[s], 4.0));
    t0_ = b.create_event();
    for (std::size_t i = 0; i < 2 * n; ++i) events_.push_back(b.create_event());
  }

  void issue() {
    const StreamId compute = streams_.at(graph::Stream::compute);
    // All ranks start together: a tiny all-reduce over the world, then t0.
    b_.enqueue_collective(compute, world_comm_, OpKind::all_reduce, 4.0);
    b_.record(compute, t0_);
    for (const auto& [s, id] : streams_) {
      if (id != compute) b_.wait(id, t0_);
    }
    for (std::size_t i = 0; i < g_.size(); ++i) {
      const int id = static_cast<int>(i);
      const graph::Op& op = g_.op(id);
      if (!runs_here(op)) continue;
      if (op.kind == OpKind::cpu_wait) {
        for (const auto& [pred, kind] : g_.predecessors(id)) await(pred);
        continue;
      }
      const StreamId s = streams_.at(op.stream);
      // What another stage's rank ran reaches this one only through a send both ran.
      for (const auto& [pred, kind] : g_.predecessors(id)) {
        const graph::Op& p = g_.op(pred);
        if (p.kind != OpKind::cpu_wait && p.stream != op.stream && runs_here(p)) b_.wait(s, end_event(pred));
      }
      b_.record(s, start_event(id));
      if (op.kind == OpKind::send && op.group != Group::pp) {
        b_.enqueue_shift(s, comms_.at(comm_key(op)), op.bytes, op.shift);
      } else if (op.is_collective()) {
        b_.enqueue_collective(s, comms_.at(comm_key(op)), op.kind, op.bytes);
      } else {
        for (const auto& k : kernels_[i]) b_.enqueue(s, k);
      }
      b_.record(s, end_event(id));
    }
  }

  // Waits for every op, in id order, kicking the watchdog as they complete.
  void finish() {
    for (std::size_t i = 0; i < g_.size(); ++i) {
      const graph::Op& op = g_.op(static_cast<int>(i));
      if (op.kind != OpKind::cpu_wait && runs_here(op)) await(static_cast<int>(i));
    }
  }

  [[nodiscard]] RankTimes times() {
    RankTimes rt;
    rt.t0_clock = b_.shared_clock(t0_);
    std::vector<graph::Interval>& out = rt.ops;
    out.resize(g_.size());
    // Ops of other stages keep {-1, -1}: never ran on this rank.
    for (std::size_t i = 0; i < g_.size(); ++i) {
      const int id = static_cast<int>(i);
      if (g_.op(id).kind == OpKind::cpu_wait || !runs_here(g_.op(id))) continue;
      out[i] = {b_.elapsed(t0_, start_event(id)), b_.elapsed(t0_, end_event(id))};
    }
    for (std::size_t i = 0; i < g_.size(); ++i) {
      const int id = static_cast<int>(i);
      if (g_.op(id).kind != OpKind::cpu_wait || !runs_here(g_.op(id))) continue;
      double t = 0;
      for (const auto& [pred, kind] : g_.predecessors(id)) t = std::max(t, out[static_cast<std::size_t>(pred)].end);
      out[i] = {t, t};
    }
    return rt;
  }

 private:
  [[nodiscard]] bool runs_here(const graph::Op& op) const { return op.runs_on_stage(stage_); }
  EventId start_event(int op) const { return events_[2 * static_cast<std::size_t>(op)]; }
  EventId end_event(int op) const { return events_[2 * static_cast<std::size_t>(op) + 1]; }

  // Polls until op's end event completed; never blocks in the backend, so the watchdog can fire.
  void await(int op) {
    if (g_.op(op).kind == OpKind::cpu_wait || !runs_here(g_.op(op))) return;
    const EventId e = end_event(op);
    if (b_.query(e)) return;
    w_.kick(first_pending(op));
    auto pause = std::chrono::microseconds(2);
    while (!b_.query(e)) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }

  // What the step is stuck on, for the watchdog: the start barrier, or the first op not done.
  std::string first_pending(int upto) {
    if (!b_.query(t0_)) return "the start barrier (an all-reduce over all ranks)";
    for (int i = 0; i <= upto; ++i) {
      if (g_.op(i).kind != OpKind::cpu_wait && runs_here(g_.op(i)) && !b_.query(end_event(i))) return describe(g_.op(i));
    }
    return describe(g_.op(upto));
  }

  const graph::StepGraph& g_;
  Backend& b_;
  Watchdog& w_;
  std::map<graph::Stream, StreamId> streams_;
  int stage_ = 0;  // the pipeline stage this rank runs (0 without a pipeline)
  std::map<CommKey, CommId> comms_;
  CommId world_comm_ = 0;
  std::vector<std::vector<Kernel>> kernels_;
  EventId t0_ = 0;
  std::vector<EventId> events_;
};

}  // namespace

void check_replayable(const graph::StepGraph& g, int world, const std::string& source) {
  if (g.info.world_size != world) {
    throw ConfigError(Location{source, 0, 0}, "info.world_size",
                      fmt::format("the graph is for {} ranks; {} were started (export it for {} GPUs, e.g. with --set "
                                  "cluster.overrides.node.gpus={}, or start {} ranks)",
                                  g.info.world_size, world, world, world, g.info.world_size));
  }
  for (std::size_t i = 0; i < g.size(); ++i) {
    for (const auto& [pred, kind] : g.predecessors(static_cast<int>(i))) {
      if (pred >= static_cast<int>(i)) {
        throw ConfigError(
            Location{source, 0, 0}, "edges",
            fmt::format("edge {} -> {} points backwards; expected ops in issue order (edges from lower to higher ids)", pred, i));
      }
    }
  }
}

std::vector<double> RankTimes::flatten() const {
  std::vector<double> flat{t0_clock.value_or(std::nan(""))};
  for (const auto& i : ops) {
    flat.push_back(i.start);
    flat.push_back(i.end);
  }
  return flat;
}

RankTimes replay_step(const graph::StepGraph& g, Backend& b, Watchdog& watchdog, const ReplayOptions& options) {
  watchdog.kick("communicator and buffer set-up");
  Issuer issuer(g, b, watchdog);
  for (int i = 0; i < options.warmup; ++i) {
    issuer.issue();
    issuer.finish();
  }
  if (options.stall_rank && *options.stall_rank == b.rank()) {
    // Never arrive: the other ranks wait for this one in the first collective until their
    // watchdogs fire; this rank's fires too, as it makes no progress.
    watchdog.kick("nothing: this rank was told to stall (--fault stall)");
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  issuer.issue();
  issuer.finish();
  return issuer.times();
}

graph::Timeline merge_ranks(std::size_t ops, int world, std::span<const double> gathered) {
  const std::size_t per_rank = 1 + 2 * ops;
  graph::Timeline t(ops, world);
  double first_t0 = std::numeric_limits<double>::infinity();
  bool shared = true;
  for (int r = 0; r < world; ++r) {
    const double t0 = gathered[static_cast<std::size_t>(r) * per_rank];
    shared = shared && !std::isnan(t0);
    first_t0 = std::min(first_t0, t0);
  }
  for (int r = 0; r < world; ++r) {
    const std::size_t base = static_cast<std::size_t>(r) * per_rank;
    const double shift = shared ? gathered[base] - first_t0 : 0.0;
    for (std::size_t o = 0; o < ops; ++o) {
      const double start = gathered[base + 1 + 2 * o];
      if (start < 0) continue;  // another pipeline stage's op: never ran here, {-1, -1}
      t.at(static_cast<int>(o), r) = {start + shift, gathered[base + 2 + 2 * o] + shift};
    }
  }
  return t;
}

}  // namespace shardsim::replay
