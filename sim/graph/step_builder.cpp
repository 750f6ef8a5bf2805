// Issuing ops in CPU program order, and making a unit's parameters available and freeing them:
// the all-gather (with FSDP1's rate limiter or FSDP2's copy-in/copy-out), CPU-offload copies and
// reshard after use. Memory effects name the category and the allocator pool of each tensor.
#include "graph/step_builder.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "fsdp/model_state.hpp"

namespace shardsim::graph {

FsdpStepBuilder::FsdpStepBuilder(const fsdp::Plan& plan, const config::ScenarioConfig& scenario, int steps, StepGraph& graph, int stage,
                                 std::int64_t micro_batch, Issuer* shared)
    : plan_(plan),
      cfg_(scenario),
      fsdp_(scenario.fsdp),
      v2_(scenario.fsdp.version == 2),
      offload_(scenario.fsdp.cpu_offload),
      steps_(steps),
      stage_(stage),
      micro_steps_(stage >= 0 ? static_cast<int>(scenario.training.micro_batch / micro_batch)
                              : static_cast<int>(scenario.training.grad_accum)),
      accumulate_(scenario.training.no_sync || stage >= 0),
      batch_{stage >= 0 ? micro_batch : scenario.training.micro_batch, scenario.training.seq_len, scenario.parallelism.cp},
      g_(graph),
      io_(shared != nullptr ? *shared : own_) {
  const std::size_t n = plan.units.size();
  available_.assign(n, -1);
  gather_of_.assign(n, -1);
  pending_gather_.assign(n, -1);
  prefetched_.assign(n, false);
  partially_sharded_.assign(n, false);
  last_compute_.assign(n, -1);
  grads_pending_.assign(n, false);
  grads_alive_.assign(n, false);
  backward_done_.assign(n, false);
  unsharded_pool_.assign(n, Pool::compute);
  grad_pieces_.resize(n);
  for (const auto& e : plan.forward) {
    if (e.kind == fsdp::TraceEvent::Kind::exit) post_forward_order_.push_back(e.unit);
  }
  post_forward_position_.assign(n, post_forward_order_.size());
  for (std::size_t i = post_forward_order_.size(); i-- > 0;) post_forward_position_[static_cast<std::size_t>(post_forward_order_[i])] = i;
  find_fused_regions();
}

// Float8 weights (FSDP2's float8 all-gather, training.float8) are gathered and held at 1 byte.
double FsdpStepBuilder::unsharded_bytes(int u) const {
  const fsdp::Unit& x = unit(u);
  return static_cast<double>(x.padded_numel - x.float8_padded_numel) * plan_.param_bytes + static_cast<double>(x.float8_padded_numel);
}

// FSDP1 produces one flat (padded) gradient per unit; FSDP2 one tensor per parameter (unpadded).
double FsdpStepBuilder::grad_bytes(int u) const {
  return static_cast<double>(v2_ ? unit(u).numel : unit(u).padded_numel) * plan_.grad_bytes;
}

double FsdpStepBuilder::reduce_buffer_bytes(int u) const {
  return static_cast<double>(unit(u).padded_numel) * plan_.reduce_bytes;
}

double FsdpStepBuilder::shard_master_bytes(int u) const {
  return static_cast<double>(unit(u).shard_numel) * plan_.master_bytes;
}

bool FsdpStepBuilder::syncing() const {
  return !accumulate_ || micro_ == micro_steps_ - 1;
}

// FSDP1: the CPU blocks on the oldest recorded reshard event once `max_inflight` are queued.
void FsdpStepBuilder::rate_limit() {
  // The depth is FSDP1's _max_num_inflight_all_gathers (2, "empirically chosen", _limiter_utils.py).
  if (v2_ || !fsdp_.limit_all_gathers || limiter_.size() < static_cast<std::size_t>(fsdp_.max_inflight_all_gathers)) return;
  const int event = limiter_.front();
  limiter_.pop_front();
  io_.cpu_wait(event, fmt::format("limiter wait ({})", g_.op(event).name));
}

// Makes unit u's parameters available: an all-gather (sharded), or a cast (no_shard with mixed
// precision). FSDP2's copy-out comes later, at wait_unshard. A prefetch records its trigger.
void FsdpStepBuilder::unshard(int u, Phase phase, int prefetch_trigger) {
  if (!has_params(u) || at(available_, u) >= 0 || at(pending_gather_, u) >= 0) return;
  const std::string& name = unit(u).name;
  if (shards_optimizer_only()) {
    gather_updated(u);
    return;
  }
  if (!plan_.traits.shards_params) {
    if (!casts_params()) return;
    const double master = static_cast<double>(unit(u).padded_numel) * plan_.master_bytes;
    Op cast = make(OpKind::copy, Stream::compute, "cast " + name, u);
    cast.work = memory_work(master + unsharded_bytes(u), 1);
    cast.memory.push_back({MemCategory::unsharded_params, unsharded_bytes(u), false, Pool::compute});
    at(unsharded_pool_, u) = Pool::compute;
    at(available_, u) = issue(std::move(cast));
    return;
  }
  rate_limit();
  const bool from_partial = phase == Phase::backward && at(partially_sharded_, u);
  int h2d = -1;
  if (offload_ && !from_partial) {
    // The fp32 shard comes over PCIe at every unshard (fsdp-semantics.md section 5).
    Op copy = make(OpKind::host_copy, Stream::h2d, "H2D " + name, u);
    copy.work.pcie_bytes = shard_master_bytes(u);
    copy.memory.push_back({MemCategory::sharded_params, shard_master_bytes(u), false, Pool::all_gather});
    h2d = issue(std::move(copy));
  }
  amax_all_reduces(u);
  Op ag = make(OpKind::all_gather, ag_stream(), "AG " + name, u);
  ag.group = from_partial ? Group::reshard : Group::shard;
  ag.bytes = unsharded_bytes(u);
  ag.cpu_s = hook_cpu_s(u, true);
  // FSDP1 allocates the unsharded flat parameter when the CPU issues the all-gather and frees it
  // with record_stream on the compute stream (_free_unsharded_flat_param): its block returns to
  // the pool only once that compute ran, so the CPU's lead (bounded by the rate limiter) sets how
  // many are live. FSDP2 frees deterministically: buffers are reused in CPU order.
  ag.memory.push_back({MemCategory::unsharded_params, unsharded_bytes(u), false, Pool::all_gather, !v2_});
  if (h2d >= 0) ag.memory.push_back({MemCategory::sharded_params, -shard_master_bytes(u), true, Pool::all_gather});
  const int id = issue(std::move(ag));
  // FSDP2's all-gather output is allocated when the hook issuing it runs on the CPU: in program
  // order, after everything issued before it, though its stream may run it on the GPU earlier.
  if (v2_) io_.allocate_in_program_order(id);
  g_.add_edge(h2d, id, EdgeKind::data);
  at(gather_of_, u) = id;
  // FSDP2: the all-gather streams wait for the previous group's copy-out before reusing buffers.
  if (v2_) g_.add_edge(last_copy_out_, id, EdgeKind::rate_limit);
  // The edge records why it is early; the all-gather stream's order already implies it.
  if (prefetch_trigger >= 0) g_.add_edge(prefetch_trigger, id, EdgeKind::prefetch);
  if (v2_) {
    at(pending_gather_, u) = id;
  } else {
    at(available_, u) = id;
    at(unsharded_pool_, u) = Pool::all_gather;
  }
  at(prefetched_, u) = prefetch_trigger >= 0;
}

// The CPU time FSDP's hooks spend on unit u's parameters at an all-gather (FSDP1: with the reshard
// that follows it; fully_shard's float8 all-gather more per float8 weight) or, for fully_shard,
// at a reduce-scatter.
double FsdpStepBuilder::hook_cpu_s(int u, bool gather) const {
  const auto& host = cfg_.cluster.topology.host;
  const double per_tensor = unit(u).tensors * (v2_ ? host.fsdp2_hook_per_tensor : host.fsdp1_hook_per_tensor).value();
  return per_tensor + (gather ? unit(u).float8_weights * host.fsdp2_float8_hook_per_weight.value() : 0.0);
}

// torchao's float8 all-gather without precomputed scales: fsdp_pre_all_gather computes each
// float8 weight's scale from its amax all-reduced (MAX) over the shard group, one small blocking
// all-reduce per weight, before the all-gather (on its stream, in this model).
void FsdpStepBuilder::amax_all_reduces(int u) {
  const int n = unit(u).float8_weights;
  if (n == 0 || cfg_.training.float8.precompute_scales.value) return;
  for (int i = 0; i < n; ++i) {
    Op ar = make(OpKind::all_reduce, ag_stream(), fmt::format("amax AR {} ({}/{})", unit(u).name, i + 1, n), u);
    ar.group = Group::shard;
    ar.bytes = 4;  // one fp32 amax
    (void)issue(std::move(ar));
  }
}

// torchao's precompute_float8_dynamic_scale_for_fsdp after the optimizer step: the amax of every
// float8 weight's shard in one foreach kernel, then one all-reduce of all of them (fp32 each).
void FsdpStepBuilder::precompute_float8_scales() {
  if (!cfg_.training.float8.precompute_scales.value) return;
  std::int64_t shard = 0;
  int weights = 0;
  for (const auto& x : plan_.units) {
    shard += x.float8_padded_numel / plan_.shard_group;
    weights += x.float8_weights;
  }
  if (weights == 0) return;
  Op amax = make(OpKind::optimizer, Stream::compute, fmt::format("float8 amax {}", step_), -1);
  amax.work = memory_work(2.0 * static_cast<double>(shard), 1);
  const int a = issue(std::move(amax));
  Op ar = make(OpKind::all_reduce, ag_stream(), fmt::format("float8 scales AR {}", step_), -1);
  ar.group = Group::shard;
  ar.bytes = 4.0 * weights;
  const int id = issue(std::move(ar));
  g_.add_edge(a, id, EdgeKind::data);
}

// FSDP2's wait_for_unshard: the compute stream waits for the all-gather, then copies out into
// per-parameter tensors. The all-gather buffer is freed after the copy-out; in forward only after
// the next group's copy-out (AllGatherState keeps it until then).
void FsdpStepBuilder::wait_unshard(int u, Phase phase) {
  at(prefetched_, u) = false;
  if (!v2_ || at(pending_gather_, u) < 0) return;
  const int ag = at(pending_gather_, u);
  at(pending_gather_, u) = -1;
  Op copy = make(OpKind::copy, Stream::compute, "copy-out " + unit(u).name, u);
  copy.work = memory_work(2 * unsharded_bytes(u), 1);
  copy.memory.push_back({MemCategory::unsharded_params, unsharded_bytes(u), false, Pool::compute});
  if (phase == Phase::backward) copy.memory.push_back({MemCategory::unsharded_params, -unsharded_bytes(u), true, Pool::all_gather});
  if (deferred_buffer_free_ >= 0) {
    copy.memory.push_back({MemCategory::unsharded_params, -unsharded_bytes(deferred_buffer_free_), true, Pool::all_gather});
    deferred_buffer_free_ = -1;
  }
  if (phase == Phase::forward) deferred_buffer_free_ = u;
  const int id = issue(std::move(copy));
  g_.add_edge(ag, id, EdgeKind::data);
  last_copy_out_ = id;
  at(available_, u) = id;
  at(unsharded_pool_, u) = Pool::compute;
}

// Frees unit u's unsharded parameters when its last compute op is done (the caching allocator
// cannot reuse them before); FSDP1 records the limiter's event there. After forward with
// reshard_after_forward = d, a 1/d copy stays for backward.
void FsdpStepBuilder::reshard(int u, Phase phase) {
  const int last = at(last_compute_, u);
  if (at(available_, u) < 0 || last < 0) return;
  Op& op = g_.op(last);
  op.memory.push_back({MemCategory::unsharded_params, -unsharded_bytes(u), true, at(unsharded_pool_, u)});
  if (at(partially_sharded_, u)) {
    op.memory.push_back({MemCategory::unsharded_params, -unsharded_bytes(u) / unit(u).reshard_to, true, Pool::compute});
    at(partially_sharded_, u) = false;
  }
  if (phase == Phase::forward && unit(u).reshard_to > 0) {
    op.memory.push_back({MemCategory::unsharded_params, unsharded_bytes(u) / unit(u).reshard_to, true, Pool::compute});
    at(partially_sharded_, u) = true;
  }
  at(available_, u) = -1;
  if (!v2_ && plan_.traits.shards_params) limiter_.push_back(last);
}

int FsdpStepBuilder::compute(Op op, int u) {
  if (pending_reorder_ > 0) {  // an all-gather's layout copy, before this op's own kernels
    add_reorder(op, pending_reorder_);
    pending_reorder_ = 0;
  }
  const int avail = at(available_, u);
  const int id = issue(std::move(op));
  g_.add_edge(avail, id, EdgeKind::data);
  g_.add_edge(tp_wait_, id, EdgeKind::data);
  tp_wait_ = -1;
  at(last_compute_, u) = id;
  last_compute_op_ = id;
  return id;
}

// A tensor-parallel collective of activations between two compute segments (model/kernels.hpp
// tp_enter / tp_leave): on the critical path, after the compute before it and before the compute
// after it. In backward, checkpointing reruns forward collectives (work.hpp collective_recomputed).
// A collective the model runs more than once (a module input its column-parallel linears gather
// each for themselves, model/kernels.hpp tp_enter) is issued that many times, one after another.
void FsdpStepBuilder::tp_collective(const fsdp::Segment& s, int u, Phase phase) {
  const model::Kernel& k = s.kernels.front();
  const auto repeat = [&](model::TpComm c, int copies, std::string_view note) {
    for (int i = 0; i < copies; ++i) {
      tp_op(s, c, copies > 1 ? std::string(note) + fmt::format(" {}/{}", i + 1, copies) : std::string(note), u);
    }
  };
  if (phase == Phase::forward) {
    repeat(k.tp_forward, k.tp_forward_copies, "");
    return;
  }
  if (collective_recomputed(k, checkpoint_mode(s, cfg_.training))) repeat(k.tp_forward, k.tp_forward_copies, " (recompute)");
  repeat(k.tp_backward, k.tp_backward_copies, "");
}

// Context parallelism's K/V gathers (and their gradients' reduce-scatters) take the same place
// on the critical path, over the cp group on its own process group.
int FsdpStepBuilder::tp_op(const fsdp::Segment& s, model::TpComm c, std::string_view note, int u, TpWait wait) {
  if (c == model::TpComm::none) return -1;
  const model::Kernel& k = s.kernels.front();
  const OpKind kind = c == model::TpComm::all_gather       ? OpKind::all_gather
                      : c == model::TpComm::reduce_scatter ? OpKind::reduce_scatter
                                                           : OpKind::all_reduce;
  const std::string_view tag = kind == OpKind::all_gather ? "AG" : kind == OpKind::reduce_scatter ? "RS" : "AR";
  const bool cp = k.context_parallel;
  const double bytes = tp_bytes(s, kind);
  const bool reorders = kind != OpKind::all_reduce && (c == k.tp_forward ? k.tp_forward_reorders : k.tp_backward_reorders);
  if (reorders && kind == OpKind::reduce_scatter) reorder_before(bytes);
  Op op = make(kind, cp ? Stream::cp : Stream::tp, fmt::format("{} {} {}{}", cp ? "CP" : "TP", tag, s.name, note), u);
  op.group = cp ? Group::cp : Group::tp;
  op.bytes = bytes;
  const int id = issue(std::move(op));
  g_.add_edge(io_.last(Stream::compute), id, EdgeKind::data);
  g_.add_edge(tp_wait_, id, EdgeKind::data);
  if (wait == TpWait::next_compute) tp_wait_ = id;
  if (reorders && kind == OpKind::all_gather) reorder_after(bytes, wait);
  return id;
}

// The copy that puts a collective's tensor of `bytes` in the layout it needs (Kernel::
// tp_forward_reorders): a memory-bound kernel on the compute stream reading and writing it once,
// holding both copies while it runs. It runs as part of the compute op next to the collective
// (before a reduce-scatter, the op that produced its input; after an all-gather, the next compute
// op), which it would follow or precede on the stream anyway: a pipelined 3D job on 16,384 GPUs
// has a quarter fewer ops to simulate than with copies of their own.
void FsdpStepBuilder::add_reorder(Op& op, double bytes) {
  op.work += memory_work(2 * bytes, 1);
  op.memory.push_back({MemCategory::activations, bytes, false, Pool::compute});
  op.memory.push_back({MemCategory::activations, -bytes, true, Pool::compute});
}

void FsdpStepBuilder::reorder_before(double bytes) {
  add_reorder(g_.op(io_.last(Stream::compute)), bytes);  // the op that produced the input
}

// An all-gather's copy goes with the next compute op, which waits for the gather. A gather that
// overlaps compute (TpWait::overlapped: Megatron's re-gather) never reorders ([s, b, h]).
void FsdpStepBuilder::reorder_after(double bytes, TpWait wait) {
  if (wait != TpWait::next_compute) throw std::logic_error("a layout copy after a TP all-gather that overlaps compute");
  pending_reorder_ += bytes;
}

void FsdpStepBuilder::check_no_pending_reorder() const {
  if (pending_reorder_ > 0) throw std::logic_error("a TP all-gather's layout copy no compute op took up");
}

double FsdpStepBuilder::tp_bytes(const fsdp::Segment& tp, OpKind kind) const {
  const model::Kernel& k = tp.kernels.front();
  return k.bytes_per_token * static_cast<double>(batch_.tokens()) * (kind == OpKind::all_gather ? k.all_gather_share : 1.0);
}

void FsdpStepBuilder::prefetch(const std::vector<int>& targets, Phase phase, int trigger) {
  for (int t : targets) unshard(t, phase, trigger);
}

}  // namespace shardsim::graph
