#include "graph/builder.hpp"

#include <fmt/format.h>

#include <array>
#include <deque>
#include <map>

#include "fsdp/model_state.hpp"
#include "graph/work.hpp"

namespace shardsim::graph {
namespace {

using fsdp::TraceEvent;
constexpr int kStreams = 6;

class Builder {
 public:
  Builder(const fsdp::Plan& plan, const config::ScenarioConfig& scenario)
      : plan_(plan), cfg_(scenario), fsdp_(scenario.fsdp), v2_(scenario.fsdp.version == 2) {
    batch_ = Batch{scenario.training.micro_batch, scenario.training.seq_len};
    ac_ = static_cast<model::AcMode>(scenario.training.activation_checkpointing);
    const std::size_t n = plan.units.size();
    available_.assign(n, -1);
    gather_of_.assign(n, -1);
    prefetched_.assign(n, false);
    last_compute_.assign(n, -1);
    grads_pending_.assign(n, false);
    for (const auto& e : plan.forward) {
      if (e.kind == TraceEvent::Kind::exit) post_forward_order_.push_back(e.unit);
    }
  }

  StepGraph build() {
    fill_info();
    for (int step = 0; step < cfg_.simulation.steps; ++step) {
      step_ = step;
      for (int micro = 0; micro < cfg_.training.grad_accum; ++micro) {
        micro_ = micro;
        barrier_ = last_[static_cast<std::size_t>(Stream::compute)];
        started_.fill(false);
        forward();
        backward();
        // Later micro-steps issue at least as many ops as the first: stop now rather than at the limit.
        if (step == 0 && micro == 0 &&
            g_.size() * static_cast<std::size_t>(cfg_.training.grad_accum * cfg_.simulation.steps) >
                static_cast<std::size_t>(cfg_.simulation.max_ops.value)) {
          too_many_ops();
        }
      }
      optimizer();
    }
    (void)g_.topological_order();  // asserts the schedule is a DAG
    return std::move(g_);
  }

 private:
  // ---- issuing ops in CPU program order ----------------------------------------------------

  int issue(Op op) {
    if (g_.size() >= static_cast<std::size_t>(cfg_.simulation.max_ops.value)) too_many_ops();
    op.step = step_;
    op.micro = micro_;
    const auto s = static_cast<std::size_t>(op.stream);
    const int id = g_.add_op(std::move(op));
    g_.add_edge(last_[s], id, EdgeKind::stream);
    if (cpu_gate_ >= 0 && gate_seen_[s] != cpu_gate_) {
      g_.add_edge(cpu_gate_, id, EdgeKind::cpu);
      gate_seen_[s] = cpu_gate_;
    }
    // A new micro-step's first op on each stream waits for the compute issued before it
    // (the root's pre-forward makes the unshard streams wait on the default stream).
    if (!started_[s]) {
      g_.add_edge(barrier_, id, EdgeKind::data);
      started_[s] = true;
    }
    last_[s] = id;
    return id;
  }

  // simulation.max_ops: a graph past it would exhaust memory before the engine even starts.
  [[noreturn]] void too_many_ops() const {
    const auto& limit = cfg_.simulation.max_ops;
    throw ConfigError(
        limit.where, "simulation.max_ops",
        fmt::format("the step graph needs more than {} ops ({} FSDP units, training.grad_accum {}, simulation.steps {}); expected at "
                    "most {} (raise simulation.max_ops, or simulate fewer layers, micro-steps or steps)",
                    limit.value, plan_.units.size(), cfg_.training.grad_accum, cfg_.simulation.steps, limit.value));
  }

  Op make(OpKind kind, Stream stream, std::string name, int unit) {
    Op op;
    op.kind = kind;
    op.stream = stream;
    op.name = std::move(name);
    op.unit = unit;
    return op;
  }

  const fsdp::Unit& unit(int u) const { return plan_.units[static_cast<std::size_t>(u)]; }
  double unsharded_bytes(int u) const { return static_cast<double>(unit(u).padded_numel) * plan_.param_bytes; }
  bool has_params(int u) const { return unit(u).padded_numel > 0; }
  Stream ag_stream() const { return v2_ ? Stream::all_gather : Stream::nccl; }
  Stream rs_stream() const { return v2_ ? Stream::reduce_scatter : Stream::nccl; }

  // FSDP1: the CPU blocks until the oldest recorded reshard event when two are queued.
  void rate_limit() {
    // The depth is FSDP1's _max_num_inflight_all_gathers (2, "empirically chosen", _limiter_utils.py).
    if (v2_ || !fsdp_.limit_all_gathers || limiter_.size() < static_cast<std::size_t>(fsdp_.max_inflight_all_gathers)) return;
    const int event = limiter_.front();
    limiter_.pop_front();
    Op wait = make(OpKind::cpu_wait, Stream::cpu, fmt::format("limiter wait ({})", g_.op(event).name), -1);
    const int id = issue(std::move(wait));
    g_.add_edge(event, id, EdgeKind::rate_limit);
    cpu_gate_ = id;
  }

  // Makes unit u's parameters available: an all-gather (sharded) or a cast (no_shard with
  // mixed precision). FSDP2's copy-out happens later, at wait_unshard.
  void unshard(int u, bool prefetch) {
    if (!has_params(u) || available_[static_cast<std::size_t>(u)] >= 0 || prefetched_[static_cast<std::size_t>(u)] ||
        pending_gather_.count(u) > 0) {
      return;
    }
    const std::string& name = unit(u).name;
    if (!plan_.traits.shards_params) {
      if (plan_.param_bytes == plan_.master_bytes) return;
      const double master = static_cast<double>(unit(u).padded_numel) * plan_.master_bytes;
      Op cast = make(OpKind::copy, Stream::compute, "cast " + name, u);
      cast.work = memory_work(master + unsharded_bytes(u), 1);
      cast.memory.push_back({MemCategory::unsharded_params, unsharded_bytes(u), false});
      available_[static_cast<std::size_t>(u)] = issue(std::move(cast));
      return;
    }
    rate_limit();
    Op ag = make(OpKind::all_gather, ag_stream(), "AG " + name, u);
    ag.group = Group::shard;
    ag.bytes = unsharded_bytes(u);
    ag.memory.push_back({MemCategory::unsharded_params, unsharded_bytes(u), false});
    const int id = issue(std::move(ag));
    gather_of_[static_cast<std::size_t>(u)] = id;
    // FSDP2: the all-gather streams wait for the previous group's copy-out before reusing.
    if (v2_) g_.add_edge(last_copy_out_, id, EdgeKind::rate_limit);
    // A prefetch is issued once the current unit's own all-gather has been waited for; on the
    // GPU the all-gather stream's order already implies it, the edge records why it is early.
    if (prefetch) g_.add_edge(prefetch_trigger_, id, EdgeKind::prefetch);
    if (v2_) {
      pending_gather_[u] = id;
    } else {
      available_[static_cast<std::size_t>(u)] = id;
    }
    prefetched_[static_cast<std::size_t>(u)] = prefetch;
  }

  // FSDP2's wait_for_unshard: the compute stream waits for the all-gather, then copies out into
  // per-parameter tensors. The all-gather buffer is freed after the copy-out; in forward, only
  // once the next group's all-gather is issued (AllGatherState), which is after this copy-out.
  void wait_unshard(int u, bool forward_pass) {
    prefetched_[static_cast<std::size_t>(u)] = false;
    if (!v2_) return;
    auto it = pending_gather_.find(u);
    if (it == pending_gather_.end()) return;
    const int ag = it->second;
    pending_gather_.erase(it);
    Op copy = make(OpKind::copy, Stream::compute, "copy-out " + unit(u).name, u);
    copy.work = memory_work(2 * unsharded_bytes(u), 1);
    copy.memory.push_back({MemCategory::unsharded_params, unsharded_bytes(u), false});
    if (!forward_pass) copy.memory.push_back({MemCategory::unsharded_params, -unsharded_bytes(u), true});
    const int id = issue(std::move(copy));
    g_.add_edge(ag, id, EdgeKind::data);
    if (deferred_buffer_free_ >= 0) {
      g_.op(id).memory.push_back({MemCategory::unsharded_params, -unsharded_bytes(deferred_buffer_free_), true});
      deferred_buffer_free_ = -1;
    }
    if (forward_pass) deferred_buffer_free_ = u;
    last_copy_out_ = id;
    available_[static_cast<std::size_t>(u)] = id;
  }

  // Frees unit u's unsharded parameters once its last compute op is done; FSDP1 records the
  // limiter's event there.
  void reshard(int u) {
    const int last = last_compute_[static_cast<std::size_t>(u)];
    if (available_[static_cast<std::size_t>(u)] < 0 || last < 0) return;
    g_.op(last).memory.push_back({MemCategory::unsharded_params, -unsharded_bytes(u), true});
    available_[static_cast<std::size_t>(u)] = -1;
    if (!v2_ && plan_.traits.shards_params) limiter_.push_back(last);
  }

  int compute(Op op, int u) {
    const int avail = available_[static_cast<std::size_t>(u)];
    const int id = issue(std::move(op));
    g_.add_edge(avail, id, EdgeKind::data);
    last_compute_[static_cast<std::size_t>(u)] = id;
    return id;
  }

  // ---- forward ------------------------------------------------------------------------------

  int next_unit_in_forward(std::size_t from) const {
    for (std::size_t i = from + 1; i < plan_.forward.size(); ++i) {
      if (plan_.forward[i].kind == TraceEvent::Kind::enter) return plan_.forward[i].unit;
    }
    return -1;
  }

  void forward() {
    // FSDP1 records the forward order during the first iteration, so it cannot prefetch then.
    const bool fwd_prefetch = fsdp_.forward_prefetch && (v2_ || step_ > 0);
    for (std::size_t i = 0; i < plan_.forward.size(); ++i) {
      const TraceEvent& e = plan_.forward[i];
      switch (e.kind) {
        case TraceEvent::Kind::enter:
          unshard(e.unit, false);
          wait_unshard(e.unit, true);
          if (fwd_prefetch) {
            prefetch_trigger_ = gather_of_[static_cast<std::size_t>(e.unit)];
            if (int next = next_unit_in_forward(i); next >= 0) unshard(next, true);
          }
          break;
        case TraceEvent::Kind::compute: {
          const fsdp::Segment& s = plan_.segments[static_cast<std::size_t>(e.segment)];
          Op op = make(OpKind::forward, Stream::compute, "FWD " + s.name, e.unit);
          op.work = forward_work(s, batch_);
          const double saved = activation_bytes(s.activation.saved, s.in_block);
          if (saved > 0) op.memory.push_back({MemCategory::activations, saved, false});
          compute(std::move(op), e.unit);
          break;
        }
        case TraceEvent::Kind::exit:
          if (unit(e.unit).reshard_after_forward && plan_.traits.shards_params) reshard(e.unit);
          break;
      }
    }
  }

  // ---- backward -----------------------------------------------------------------------------

  // post_forward_order[idx - 1]: the unit that finished forward just before u runs backward
  // next; nothing once its backward has run (FSDP1's _needs_pre_backward_unshard is cleared).
  int backward_prefetch_target(int u) const {
    for (std::size_t i = 1; i < post_forward_order_.size(); ++i) {
      if (post_forward_order_[i] != u) continue;
      const int t = post_forward_order_[i - 1];
      return backward_done_[static_cast<std::size_t>(t)] ? -1 : t;
    }
    return -1;
  }

  void backward() {
    const auto prefetch = v2_ ? config::BackwardPrefetch::pre : fsdp_.backward_prefetch;
    backward_done_.assign(plan_.units.size(), false);
    for (auto it = plan_.forward.rbegin(); it != plan_.forward.rend(); ++it) {
      const TraceEvent& e = *it;
      switch (e.kind) {
        case TraceEvent::Kind::exit:  // pre-backward
          unshard(e.unit, false);
          wait_unshard(e.unit, false);
          grads_pending_[static_cast<std::size_t>(e.unit)] = has_params(e.unit);
          if (prefetch == config::BackwardPrefetch::pre) {
            prefetch_trigger_ = gather_of_[static_cast<std::size_t>(e.unit)];
            if (int t = backward_prefetch_target(e.unit); t >= 0) unshard(t, true);
          }
          break;
        case TraceEvent::Kind::compute:
          backward_compute(plan_.segments[static_cast<std::size_t>(e.segment)], e.unit);
          break;
        case TraceEvent::Kind::enter:  // post-backward
          backward_done_[static_cast<std::size_t>(e.unit)] = true;
          if (plan_.traits.shards_params || plan_.param_bytes != plan_.master_bytes) reshard(e.unit);
          if (prefetch == config::BackwardPrefetch::post) {
            prefetch_trigger_ = gather_of_[static_cast<std::size_t>(e.unit)];
            if (int t = backward_prefetch_target(e.unit); t >= 0) unshard(t, true);
          }
          reduce(e.unit);
          break;
      }
    }
  }

  void backward_compute(const fsdp::Segment& s, int u) {
    Op op = make(OpKind::backward, Stream::compute, "BWD " + s.name, u);
    op.work = backward_work(s, batch_, ac_);
    const double transient = activation_bytes(s.activation.backward_transient, s.in_block);
    const double saved = activation_bytes(s.activation.saved, s.in_block);
    if (transient > 0) {
      op.memory.push_back({MemCategory::activations, transient, false});
      op.memory.push_back({MemCategory::activations, -transient, true});
    }
    if (saved > 0) op.memory.push_back({MemCategory::activations, -saved, true});
    // Gradients appear with the first parameter gradient: FSDP1's flat gradient all at once,
    // FSDP2's per-parameter gradients as each is produced.
    if (s.numel > 0 && unit(u).numel > 0) {
      if (v2_) {
        const double share = static_cast<double>(s.numel) / static_cast<double>(unit(u).numel);
        op.memory.push_back({MemCategory::gradients, share * grad_bytes(u), false});
      } else if (grads_pending_[static_cast<std::size_t>(u)]) {
        op.memory.push_back({MemCategory::gradients, grad_bytes(u), false});
        grads_pending_[static_cast<std::size_t>(u)] = false;
      }
    }
    compute(std::move(op), u);
  }

  double grad_bytes(int u) const { return static_cast<double>(unit(u).padded_numel) * plan_.grad_bytes; }
  double shard_grad_bytes(int u) const { return static_cast<double>(unit(u).shard_numel) * plan_.master_bytes; }

  // Reduce-scatter (or all-reduce) of unit u's gradients after its backward.
  void reduce(int u) {
    if (!has_params(u)) return;
    const int last = last_compute_[static_cast<std::size_t>(u)];
    const double reduce_buffer = static_cast<double>(unit(u).padded_numel) * plan_.reduce_bytes;
    const bool first_micro = micro_ == 0;
    int producer = last;
    if (v2_ && plan_.traits.shards_params) {
      // FSDP2: the compute stream waits for the previous reduce-scatter, then chunk_cat copies
      // the gradients into the reduce-scatter input (reduce dtype) on the compute stream.
      Op copy = make(OpKind::copy, Stream::compute, "copy-in " + unit(u).name, u);
      copy.work = memory_work(grad_bytes(u) + reduce_buffer, 1);
      copy.memory.push_back({MemCategory::gradients, reduce_buffer, false});
      copy.memory.push_back({MemCategory::gradients, -grad_bytes(u), true});
      producer = issue(std::move(copy));
      g_.add_edge(last, producer, EdgeKind::data);
      g_.add_edge(last_reduce_, producer, EdgeKind::rate_limit);
    }
    Op op = make(plan_.traits.reduce_scatter && plan_.traits.shards_params ? OpKind::reduce_scatter : OpKind::all_reduce,
                 plan_.traits.shards_params ? rs_stream() : (v2_ ? Stream::all_reduce : Stream::nccl),
                 (plan_.traits.shards_params ? "RS " : "AR ") + unit(u).name, u);
    op.group = plan_.traits.shards_params ? Group::shard : Group::world;
    op.bytes = reduce_buffer;
    if (first_micro) op.memory.push_back({MemCategory::grad_shards, shard_grad_bytes(u), false});
    if (v2_ && plan_.traits.shards_params) {
      op.memory.push_back({MemCategory::gradients, -reduce_buffer, true});
    } else {
      // FSDP1 casts to the reduce dtype into a new buffer when it differs, then frees both.
      const bool cast = plan_.reduce_bytes != plan_.grad_bytes;
      if (cast) op.memory.push_back({MemCategory::gradients, reduce_buffer, false});
      op.memory.push_back({MemCategory::gradients, -(grad_bytes(u) + (cast ? reduce_buffer : 0.0)), true});
    }
    const int id = issue(std::move(op));
    g_.add_edge(producer, id, EdgeKind::data);
    last_reduce_ = id;
    if (plan_.traits.hybrid && plan_.replicate_group > 1) {
      Op ar = make(OpKind::all_reduce, Stream::all_reduce, "AR " + unit(u).name, u);
      ar.group = Group::replicate;
      ar.bytes = static_cast<double>(unit(u).shard_numel) * plan_.reduce_bytes;
      const int ar_id = issue(std::move(ar));
      g_.add_edge(id, ar_id, EdgeKind::data);
    }
  }

  // ---- optimizer ----------------------------------------------------------------------------

  void optimizer() {
    std::int64_t shard = 0;
    for (const auto& u : plan_.units) shard += u.shard_numel;
    Op op = make(OpKind::optimizer, Stream::compute, fmt::format("optimizer step {}", step_), -1);
    op.work = memory_work(static_cast<double>(shard) * fsdp::optimizer_bytes_per_param(cfg_.training.optimizer, plan_.master_bytes),
                          8 * static_cast<int>(plan_.units.size()));
    op.memory.push_back({MemCategory::grad_shards, -static_cast<double>(shard) * plan_.master_bytes, true});
    const int id = issue(std::move(op));
    // The final callback makes the compute stream wait for every reduction stream.
    for (Stream s : {Stream::nccl, Stream::reduce_scatter, Stream::all_reduce}) {
      g_.add_edge(last_[static_cast<std::size_t>(s)], id, EdgeKind::data);
    }
  }

  // ---- bookkeeping ----------------------------------------------------------------------------

  double activation_bytes(const std::array<double, 3>& per_mode, bool in_block) const {
    const double per_token = per_mode[static_cast<std::size_t>(in_block ? ac_ : model::AcMode::none)];
    return per_token * static_cast<double>(batch_.tokens());
  }

  void fill_info() {
    GraphInfo& info = g_.info;
    info.scenario = cfg_.name;
    info.world_size = plan_.world_size;
    info.gpus_per_node = cfg_.cluster.topology.node.gpus;
    info.shard_group = plan_.shard_group;
    info.replicate_group = plan_.replicate_group;
    info.steps = cfg_.simulation.steps;
    info.micro_steps = static_cast<int>(cfg_.training.grad_accum);
    info.tokens_per_micro_step = batch_.tokens();
    std::int64_t shard = 0;
    for (const auto& u : plan_.units) shard += u.shard_numel;
    const auto state = fsdp::model_state_bytes(static_cast<double>(shard), 1, plan_.master_bytes, cfg_.training.optimizer);
    info.initial_memory[static_cast<std::size_t>(MemCategory::sharded_params)] = state.params;
    info.initial_memory[static_cast<std::size_t>(MemCategory::optimizer_state)] = state.optimizer;
  }

  const fsdp::Plan& plan_;
  const config::ScenarioConfig& cfg_;
  const config::FsdpConfig& fsdp_;
  bool v2_;
  Batch batch_;
  model::AcMode ac_ = model::AcMode::none;
  StepGraph g_;
  int step_ = 0;
  int micro_ = 0;

  std::array<int, kStreams> last_{-1, -1, -1, -1, -1, -1};
  std::array<int, kStreams> gate_seen_{-1, -1, -1, -1, -1, -1};
  std::array<bool, kStreams> started_{};
  int barrier_ = -1;
  int cpu_gate_ = -1;
  int prefetch_trigger_ = -1;
  int last_copy_out_ = -1;
  int last_reduce_ = -1;
  int deferred_buffer_free_ = -1;
  std::deque<int> limiter_;
  std::vector<int> available_;  // op after which unit u's parameters are usable, -1 if not
  std::vector<bool> prefetched_;
  std::vector<int> gather_of_;  // the latest all-gather of unit u
  std::vector<int> last_compute_;
  std::vector<bool> grads_pending_;
  std::vector<bool> backward_done_;
  std::map<int, int> pending_gather_;  // FSDP2: unit -> all-gather awaiting copy-out
  std::vector<int> post_forward_order_;
};

}  // namespace

StepGraph build_step_graph(const model::Model& model, const fsdp::Plan& plan, const config::ScenarioConfig& scenario) {
  (void)model;
  return Builder(plan, scenario).build();
}

}  // namespace shardsim::graph
