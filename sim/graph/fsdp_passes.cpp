// The passes of one step: forward (walk the trace), backward (walk it reversed: exit = pre-backward,
// enter = post-backward), reduction of gradients, and the optimizer step.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "fsdp/model_state.hpp"
#include "graph/step_builder.hpp"

namespace shardsim::graph {

using fsdp::TraceEvent;

void FsdpStepBuilder::build() {
  fill_info();
  const auto too_many = [this] { throw_too_many_ops(cfg_, plan_.units.size(), steps_); };
  io_.set_limit(cfg_.simulation.max_ops.value, too_many);
  for (int step = 0; step < steps_; ++step) {
    step_ = step;
    for (int micro = 0; micro < micro_steps_; ++micro) {
      micro_ = micro;
      io_.begin_micro_step(step, micro, micro == 0 ? last_optimizer_ : io_.last(Stream::compute));
      forward();
      backward();
      // Later micro-steps issue at least as many ops as the first: stop now rather than at the limit.
      if (step == 0 && micro == 0 &&
          static_cast<double>(g_.size()) * static_cast<double>(micro_steps_) * steps_ >
              static_cast<double>(cfg_.simulation.max_ops.value)) {
        too_many();
      }
    }
    optimizer();
  }
  (void)g_.topological_order();  // asserts the schedule is a DAG
}

// ---- a pipeline stage's program ---------------------------------------------------------------

int FsdpStepBuilder::pipeline_forward(int step, int micro, int input) {
  step_ = step;
  micro_ = micro;
  io_.begin_micro_step(step, micro, last_optimizer_);
  tp_wait_ = input;  // the stage's first compute waits for its input as for a TP collective's
  forward();
  return stage_output();
}

int FsdpStepBuilder::pipeline_backward(int step, int micro, int grad_input) {
  step_ = step;
  micro_ = micro;
  io_.begin_micro_step(step, micro, last_optimizer_);
  tp_wait_ = grad_input;
  backward();
  return stage_output();
}

int FsdpStepBuilder::pipeline_backward_input(int step, int micro, int grad_input) {
  part_ = BackwardPart::input;
  const int out = pipeline_backward(step, micro, grad_input);
  part_ = BackwardPart::all;
  return out;
}

void FsdpStepBuilder::pipeline_backward_weight(int step, int micro) {
  part_ = BackwardPart::weight;
  step_ = step;
  micro_ = micro;
  io_.begin_micro_step(step, micro, last_optimizer_);
  backward();
  part_ = BackwardPart::all;
}

// What produced the stage's output: its last compute op, or a tensor-parallel collective after
// it (sequence parallelism's reduce-scatter at a block's end).
int FsdpStepBuilder::stage_output() {
  const int out = tp_wait_ >= 0 ? tp_wait_ : last_compute_op_;
  tp_wait_ = -1;
  return out;
}

void FsdpStepBuilder::pipeline_optimizer(int step, int wait) {
  step_ = step;
  optimizer();
  g_.add_edge(wait, last_optimizer_, EdgeKind::data);
}

// ---- forward -------------------------------------------------------------------------------

// The next `forward_prefetch` units to be entered after trace position `from`.
std::vector<int> FsdpStepBuilder::forward_prefetch_targets(std::size_t from) const {
  std::vector<int> out;
  for (std::size_t i = from + 1; i < plan_.forward.size() && static_cast<int>(out.size()) < fsdp_.forward_prefetch; ++i) {
    if (plan_.forward[i].kind == TraceEvent::Kind::enter) out.push_back(plan_.forward[i].unit);
  }
  return out;
}

void FsdpStepBuilder::forward() {
  // FSDP1 records the forward order during the first iteration, so it cannot prefetch then.
  const bool fwd_prefetch = fsdp_.forward_prefetch > 0 && (v2_ || step_ > 0);
  for (std::size_t i = 0; i < plan_.forward.size(); ++i) {
    const TraceEvent& e = plan_.forward[i];
    switch (e.kind) {
      case TraceEvent::Kind::enter:
        unshard(e.unit, Phase::forward, -1);
        wait_unshard(e.unit, Phase::forward);
        if (fwd_prefetch) prefetch(forward_prefetch_targets(i), Phase::forward, at(gather_of_, e.unit));
        break;
      case TraceEvent::Kind::compute:
        forward_compute(plan_.segments[static_cast<std::size_t>(e.segment)], e.segment, e.unit);
        break;
      case TraceEvent::Kind::exit:
        if (unit(e.unit).reshard_after_forward && plan_.traits.shards_params) reshard(e.unit, Phase::forward);
        break;
    }
  }
}

void FsdpStepBuilder::forward_compute(const fsdp::Segment& s, int segment, int u) {
  if (s.tp_comm) {
    if (!fused_away(segment)) tp_collective(s, u, Phase::forward);
    return;
  }
  if (at(ring_of_, segment) >= 0) {
    forward_ring(s, segment, u);
    return;
  }
  if (at(fused_gather_, segment) >= 0 || at(fused_scatter_, segment) >= 0) {
    forward_fused(s, segment, u);
    return;
  }
  plain_forward(s, u);
}

void FsdpStepBuilder::plain_forward(const fsdp::Segment& s, int u) {
  Op op = make(OpKind::forward, Stream::compute, "FWD " + s.name, u);
  op.work = forward_work(s, batch_);
  save_activations(op, s);
  compute(std::move(op), u);
}

// What the segment's forward keeps for its backward (per its checkpointing mode).
void FsdpStepBuilder::save_activations(Op& op, const fsdp::Segment& s) const {
  const double saved = activation_bytes(s.activation.saved, checkpoint_mode(s, cfg_.training), batch_);
  if (saved > 0) op.memory.push_back({s.is_loss ? MemCategory::loss : MemCategory::activations, saved, false, Pool::compute});
}

// ---- backward ------------------------------------------------------------------------------

// The forward trace reversed. With backward_hook_order: pre_first, unit k-1's pre-backward fires
// before unit k's post-backward (the autograd engine may order them either way; FSDP1 only).
std::vector<TraceEvent> FsdpStepBuilder::backward_events() const {
  std::vector<TraceEvent> out(plan_.forward.rbegin(), plan_.forward.rend());
  if (v2_ || fsdp_.backward_hook_order != config::HookOrder::pre_first) return out;
  for (std::size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i].kind == TraceEvent::Kind::enter && out[i + 1].kind == TraceEvent::Kind::exit) {
      std::swap(out[i], out[i + 1]);
      ++i;
    }
  }
  return out;
}

// post_forward_order[idx - 1], [idx - 2], ...: the units that finished forward just before u run
// backward next; none once their backward has run (FSDP1's _needs_pre_backward_unshard cleared).
std::vector<int> FsdpStepBuilder::backward_prefetch_targets(int u) const {
  const int depth = v2_ ? fsdp_.backward_prefetch_depth : 1;
  std::vector<int> out;
  const auto it = post_forward_order_.begin() + static_cast<std::ptrdiff_t>(post_forward_position_[static_cast<std::size_t>(u)]);
  for (auto p = it; p != post_forward_order_.begin() && static_cast<int>(out.size()) < depth;) {
    --p;
    if (!backward_done_[static_cast<std::size_t>(*p)]) out.push_back(*p);
  }
  return out;
}

void FsdpStepBuilder::backward() {
  // FSDP2 always prefetches in pre-backward (torchtitan docs/fsdp.md: "post can prefetch incorrectly").
  const auto mode = v2_ ? config::BackwardPrefetch::pre : fsdp_.backward_prefetch;
  // A zero-bubble schedule's input pass runs the hooks that make parameters available, its
  // weight pass those that follow the gradients (post-backward reshard and reduction).
  const bool inputs = part_ != BackwardPart::weight;
  const bool weights = part_ != BackwardPart::input;
  if (inputs) backward_done_.assign(plan_.units.size(), 0);
  bucket_numel_ = 0;
  for (const TraceEvent& e : backward_events()) {
    switch (e.kind) {
      case TraceEvent::Kind::exit:  // pre-backward
        if (!inputs) break;
        unshard(e.unit, Phase::backward, -1);
        wait_unshard(e.unit, Phase::backward);
        at(grads_pending_, e.unit) = has_params(e.unit) && !at(grads_alive_, e.unit);
        if (mode == config::BackwardPrefetch::pre) prefetch(backward_prefetch_targets(e.unit), Phase::backward, at(gather_of_, e.unit));
        break;
      case TraceEvent::Kind::compute:
        backward_compute(plan_.segments[static_cast<std::size_t>(e.segment)], e.segment, e.unit);
        break;
      case TraceEvent::Kind::enter: {  // post-backward
        if (inputs) at(backward_done_, e.unit) = true;
        if (!weights) break;
        // Parameters are freed unless no_sync keeps them for the next micro-step (SHARD_GRAD_OP).
        const bool keep = !syncing() && !unit(e.unit).reshard_after_forward;
        if ((plan_.traits.shards_params || casts_params()) && !keep) reshard(e.unit, Phase::backward);
        if (mode == config::BackwardPrefetch::post) prefetch(backward_prefetch_targets(e.unit), Phase::backward, at(gather_of_, e.unit));
        if (plan_.traits.shards_params) reduce(e.unit);
        break;
      }
    }
  }
  if (weights && !plan_.traits.shards_params) bucket_reduce(0, io_.last(Stream::compute), true);
}

void FsdpStepBuilder::backward_compute(const fsdp::Segment& s, int segment, int u) {
  if (s.tp_comm) {
    if (!fused_away(segment)) tp_collective(s, u, Phase::backward);
    return;
  }
  if (at(ring_of_, segment) >= 0) {
    backward_ring(s, segment, u);
    return;
  }
  if (at(fused_gather_, segment) >= 0 || at(fused_scatter_, segment) >= 0) {
    // Async TP needs torch.compile, which the zero-bubble schedules refuse (config/parallelism.cpp).
    if (part_ != BackwardPart::all) throw std::logic_error("async TP with a split backward");
    backward_fused(s, segment, u);
    return;
  }
  plain_backward(s, u);
}

void FsdpStepBuilder::plain_backward(const fsdp::Segment& s, int u) {
  const std::string_view prefix = part_ == BackwardPart::input ? "BWD-I " : part_ == BackwardPart::weight ? "BWD-W " : "BWD ";
  Op op = make(OpKind::backward, Stream::compute, std::string(prefix) + s.name, u);
  const model::AcMode mode = checkpoint_mode(s, cfg_.training);
  op.work = backward_work(s, batch_, mode, part_);
  backward_memory(op, s, u, mode, part_);
  if (part_ == BackwardPart::weight && op.work.launches == 0 && op.memory.empty()) return;  // no weights, nothing kept
  const int id = compute(std::move(op), u);
  if (part_ != BackwardPart::input) reduce_replicated(s, id);
}

// Without sharded parameters (DDP, ZeRO-1), the segment's gradients join the bucketed all-reduce
// (or reduce-scatter) once the backward op `id` has made them, on the micro-step that syncs.
void FsdpStepBuilder::reduce_replicated(const fsdp::Segment& s, int id) {
  if (!plan_.traits.shards_params && s.numel > 0 && syncing()) bucket_reduce(static_cast<double>(s.numel), id, false);
}

// A segment's backward op allocates its transient activations and frees its saved ones; the
// unit's gradients appear with the first parameter gradient: FSDP1's flat gradient all at once,
// FSDP2's per-parameter gradients as each is produced; under no_sync they stay for the next
// micro-step. Split (zero bubble), the input part has the transients, and the weight part frees
// the saved activations (the matmuls' inputs stay for dW = dY^T X) and makes the gradients.
void FsdpStepBuilder::backward_memory(Op& op, const fsdp::Segment& s, int u, model::AcMode mode, BackwardPart part) {
  const MemCategory act = s.is_loss ? MemCategory::loss : MemCategory::activations;
  const double transient = activation_bytes(s.activation.backward_transient, mode, batch_);
  const double saved = activation_bytes(s.activation.saved, mode, batch_);
  if (transient > 0 && part != BackwardPart::weight) {
    op.memory.push_back({act, transient, false, Pool::compute});
    op.memory.push_back({act, -transient, true, Pool::compute});
  }
  if (part == BackwardPart::input) return;
  if (saved > 0) op.memory.push_back({act, -saved, true, Pool::compute});
  // FSDP2 accumulating in a wider reduce dtype moves each micro-step's gradient into the
  // accumulator, so every backward makes a new one (upcast_accumulation()).
  const bool new_grads = !at(grads_alive_, u) || (v2_ && upcasts_accumulated_grads());
  if (s.numel > 0 && unit(u).numel > 0 && new_grads) {
    if (!plan_.traits.shards_params) {
      // DDP's gradients in the parameters' dtype (the master one); the distributed optimizer's
      // main gradients in the reduce dtype (Megatron's contiguous grad buffer).
      const double bytes = static_cast<double>(s.numel) * (plan_.traits.shards_optimizer ? plan_.reduce_bytes : plan_.master_bytes);
      op.memory.push_back({MemCategory::grad_shards, bytes, false, Pool::compute});
      grad_shard_frees_.push_back({MemCategory::grad_shards, -bytes, true, Pool::compute});
    } else if (v2_) {
      const double bytes = grad_bytes(u) * static_cast<double>(s.numel) / static_cast<double>(unit(u).numel);
      op.memory.push_back({MemCategory::gradients, bytes, false, Pool::compute});
      at(grad_pieces_, u).push_back(bytes);
    } else if (at(grads_pending_, u)) {
      op.memory.push_back({MemCategory::gradients, grad_bytes(u), false, Pool::compute});
      at(grads_pending_, u) = false;
    }
  }
}

// DDP (no_shard): gradients fill buckets of fsdp.bucket_size in backward order; a full bucket is
// all-reduced while backward goes on (DDP's Reducer, bucket_cap_mb = 25 by default). The sharded
// optimizer (shard_optimizer) reduce-scatters each bucket instead: a rank keeps the reduced
// gradients of the 1/dp it updates (Megatron's distributed optimizer, ZeRO-1).
void FsdpStepBuilder::bucket_reduce(double numel, int producer, bool flush) {
  if (!syncing()) return;
  bucket_numel_ += numel;
  const double cap = fsdp_.bucket_size.value() / plan_.master_bytes;
  if (bucket_numel_ <= 0 || (!flush && bucket_numel_ < cap)) return;
  const bool scatter = plan_.traits.shards_optimizer;
  const std::string name = fmt::format("{} bucket ({:.0f} MB)", scatter ? "RS" : "AR", bucket_numel_ * plan_.reduce_bytes / 1e6);
  Op op = scatter ? make(OpKind::reduce_scatter, rs_stream(), name, -1)
                  : make(OpKind::all_reduce, v2_ ? Stream::all_reduce : Stream::nccl, name, -1);
  // The data-parallel ranks: every rank, or with TP those of one TP index.
  op.group = scatter ? Group::shard : Group::replicate;
  op.bytes = bucket_numel_ * plan_.reduce_bytes;
  const int id = issue(std::move(op));
  g_.add_edge(producer, id, EdgeKind::data);
  last_reduce_ = id;
  bucket_numel_ = 0;
}

// shard_optimizer: each rank updated 1/dp of the parameters; before a unit's first forward of
// the step they are all-gathered in the compute dtype into the whole parameters every rank keeps
// (no memory of their own), on the all-gather stream once the optimizer step is done. Per unit,
// as FSDP unshards, which is how Megatron's overlap_param_gather overlaps them with the forward
// (per bucket there).
void FsdpStepBuilder::gather_updated(int u) {
  Op ag = make(OpKind::all_gather, ag_stream(), "AG " + unit(u).name, u);
  ag.group = Group::shard;
  ag.bytes = unsharded_bytes(u);
  const int id = issue(std::move(ag));
  g_.add_edge(last_optimizer_, id, EdgeKind::data);
  at(gather_of_, u) = id;
  at(available_, u) = id;
}

// Reduce-scatter of unit u's gradients after its backward (and the inter-node all-reduce of
// hybrid sharding); none under no_sync, where the unsharded gradients stay for the next micro-step.
void FsdpStepBuilder::reduce(int u) {
  if (!has_params(u)) return;
  if (v2_ && upcasts_accumulated_grads()) upcast_accumulation(u);
  if (!syncing()) {
    at(grads_alive_, u) = true;
    return;
  }
  at(grads_alive_, u) = false;
  const int last = at(last_compute_, u);
  const double buffer = reduce_buffer_bytes(u);
  const bool first_micro = micro_ == 0 || accumulate_;
  int producer = last;
  Op rs = make(OpKind::reduce_scatter, rs_stream(), "RS " + unit(u).name, u);
  rs.group = Group::shard;
  rs.bytes = buffer;
  if (v2_) {
    // The compute stream waits for the previous reduce-scatter, then chunk_cat copies the
    // gradients into the reduce-scatter input (reduce dtype), allocated for the RS stream.
    Op copy = make(OpKind::copy, Stream::compute, "copy-in " + unit(u).name, u);
    double grads = 0;
    for (double piece : at(grad_pieces_, u)) grads += piece;
    copy.work = memory_work(grads + buffer, 1);
    copy.memory.push_back({MemCategory::reduce_buffers, buffer, false, Pool::reduce_scatter});
    for (double piece : at(grad_pieces_, u)) copy.memory.push_back({MemCategory::gradients, -piece, true, Pool::compute});
    at(grad_pieces_, u).clear();
    producer = issue(std::move(copy));
    g_.add_edge(last, producer, EdgeKind::data);
    g_.add_edge(last_reduce_, producer, EdgeKind::rate_limit);
    rs.memory.push_back({MemCategory::reduce_buffers, -buffer, true, Pool::reduce_scatter});
  } else {
    // FSDP1 casts to the reduce dtype into a new buffer when it differs, then frees both.
    const bool cast = plan_.reduce_bytes != plan_.grad_bytes;
    if (cast) rs.memory.push_back({MemCategory::reduce_buffers, buffer, false, Pool::reduce_scatter});
    if (cast) rs.memory.push_back({MemCategory::reduce_buffers, -buffer, true, Pool::reduce_scatter});
    rs.memory.push_back({MemCategory::gradients, -grad_bytes(u), true, Pool::compute});
  }
  if (first_micro) {
    rs.memory.push_back({MemCategory::grad_shards, shard_master_bytes(u), false, Pool::reduce_scatter});
    grad_shard_frees_.push_back({MemCategory::grad_shards, -shard_master_bytes(u), true, offload_ ? Pool::host : Pool::reduce_scatter});
  }
  const int id = issue(std::move(rs));
  g_.add_edge(producer, id, EdgeKind::data);
  last_reduce_ = id;
  int reduced = id;
  if (plan_.traits.hybrid && plan_.replicate_group > 1) {
    Op ar = make(OpKind::all_reduce, Stream::all_reduce, "AR " + unit(u).name, u);
    ar.group = Group::replicate;
    ar.bytes = static_cast<double>(unit(u).shard_numel) * plan_.reduce_bytes;
    reduced = issue(std::move(ar));
    g_.add_edge(id, reduced, EdgeKind::data);
  }
  if (offload_) {
    // The reduced shard goes to pinned host memory for the CPU optimizer.
    Op d2h = make(OpKind::host_copy, Stream::d2h, "D2H " + unit(u).name, u);
    d2h.work.pcie_bytes = shard_master_bytes(u);
    d2h.memory.push_back({MemCategory::grad_shards, -shard_master_bytes(u), true, Pool::reduce_scatter});
    d2h.memory.push_back({MemCategory::grad_shards, shard_master_bytes(u), true, Pool::host});
    last_d2h_ = issue(std::move(d2h));
    g_.add_edge(reduced, last_d2h_, EdgeKind::data);
  }
}

// FSDP2 under no_sync (and pipelining) with a reduce dtype wider than the parameters' keeps the
// accumulated unsharded gradients in the reduce dtype: after the first micro-step's backward of a
// unit each gradient is cast (FSDPParam.to_accumulated_grad_if_needed: read 2, write 4 bytes an
// element in bf16 / fp32) and later micro-steps' gradients are added to it and freed
// (accumulate_unsharded_grad_if_needed: read 2 + 4, write 4), on the compute stream at
// post-backward. The accumulator is what the last micro-step's copy-in reads.
void FsdpStepBuilder::upcast_accumulation(int u) {
  auto& pieces = at(grad_pieces_, u);
  const bool first = !at(grads_alive_, u);
  if (first && syncing()) return;  // a single micro-step: reduced as made, nothing accumulated
  const double numel = static_cast<double>(unit(u).numel);
  const double accumulator = numel * plan_.reduce_bytes;
  const std::size_t made_from = first ? 0 : 1;  // pieces[0] is the accumulator after the first
  double made = 0;
  for (std::size_t i = made_from; i < pieces.size(); ++i) made += pieces[i];
  Op op = make(OpKind::copy, Stream::compute, (first ? "grad upcast " : "grad accumulate ") + unit(u).name, u);
  op.work = memory_work(first ? made + accumulator : made + 2 * accumulator, static_cast<int>(pieces.size() - made_from));
  if (first) op.memory.push_back({MemCategory::gradients, accumulator, false, Pool::compute});
  for (std::size_t i = made_from; i < pieces.size(); ++i) op.memory.push_back({MemCategory::gradients, -pieces[i], true, Pool::compute});
  if (first) {
    pieces.assign(1, accumulator);
  } else {
    pieces.resize(1);
  }
  const int id = issue(std::move(op));
  g_.add_edge(at(last_compute_, u), id, EdgeKind::data);
  at(last_compute_, u) = id;
}

// ---- optimizer ------------------------------------------------------------------------------

void FsdpStepBuilder::optimizer() {
  std::int64_t shard = 0;
  for (const auto& u : plan_.units) shard += plan_.traits.shards_optimizer ? u.shard_numel : u.numel;
  double bytes = static_cast<double>(shard) * fsdp::optimizer_bytes_per_param(cfg_.training.optimizer, plan_.master_bytes);
  // The distributed optimizer then copies its updated master shard into the model's parameters
  // where their dtypes differ (Megatron's _copy_main_params_to_model_params: read fp32, write
  // bf16), the shard the all-gather sends. FSDP casts in its all-gather copy-in instead.
  if (shards_optimizer_only() && plan_.param_bytes != plan_.master_bytes) {
    bytes += static_cast<double>(shard) * (plan_.master_bytes + plan_.param_bytes);
  }
  grad_norm_all_reduces();
  // With offload the step runs on the CPU thread over host memory, after the final callback's
  // synchronize (fsdp-semantics.md section 5).
  Op op = make(OpKind::optimizer, offload_ ? Stream::cpu : Stream::compute, fmt::format("optimizer step {}", step_), -1);
  if (offload_) {
    op.work.host_bytes = bytes;
  } else {
    op.work = memory_work(bytes, 8 * static_cast<int>(plan_.units.size()));
  }
  // zero_grad(set_to_none=True) frees the gradients after the step.
  op.memory.insert(op.memory.end(), grad_shard_frees_.begin(), grad_shard_frees_.end());
  grad_shard_frees_.clear();
  const int id = issue(std::move(op));
  after_reductions(id);
  g_.add_edge(io_.last(Stream::tp), id, EdgeKind::data);  // the gradient norm's TP all-reduce
  last_optimizer_ = id;
  // shard_optimizer: the next step starts from parameters updated in pieces (gather_updated).
  if (shards_optimizer_only()) {
    for (std::size_t u = 0; u < plan_.units.size(); ++u) at(available_, static_cast<int>(u)) = -1;
  }
  precompute_float8_scales();
}

// The final callback makes the compute stream wait for every reduction stream.
void FsdpStepBuilder::after_reductions(int id) {
  for (Stream s : {Stream::compute, Stream::nccl, Stream::reduce_scatter, Stream::all_reduce, Stream::d2h}) {
    g_.add_edge(io_.last(s), id, EdgeKind::data);
  }
}

// Gradient-norm clipping (clip_grad_norm_ before the step, as torchtitan, fms-fsdp and Megatron
// run it by default; reading and scaling the gradients is in the optimizer's bytes): the squared
// norms of a rank's gradient shards are summed over the ranks the gradients are split across, a
// 4-byte all-reduce per mesh dimension (DTensor's full_tensor of the norm): the shard group where
// gradients are sharded (not DDP's replicated ones), then the TP group. Every rank's step waits
// for them: a synchronization of the whole job once a step. torchtitan all-reduces the norm over
// the pipeline stages as well (torchtitan#596), which is not modelled.
void FsdpStepBuilder::grad_norm_all_reduces() {
  const auto all_reduce = [&](Group group, Stream stream, std::string_view over) {
    Op ar = make(OpKind::all_reduce, stream, fmt::format("grad norm AR {} {}", over, step_), -1);
    ar.group = group;
    ar.bytes = 4;  // one fp32 sum of squares
    // The norm is taken once every gradient is reduced.
    after_reductions(issue(std::move(ar)));
  };
  if (plan_.traits.shards_optimizer && plan_.shard_group > 1) all_reduce(Group::shard, Stream::all_reduce, "dp");
  if (plan_.tp_group > 1) all_reduce(Group::tp, Stream::tp, "tp");  // on TP's stream, as its other collectives
}

// Megatron's distributed optimizer keeps, for the 1/dp of the parameters a rank updates, the
// optimizer's states and a master copy and main-gradient shard where the parameters' and the
// gradients' dtypes are not the master one: with bf16 parameters, fp32 gradients and Adam,
// 4 + 4 + 4 = 12 bytes, so 2 + 4 + 12/d per parameter in all (docs/api-guide/dist_optimizer.md).
double FsdpStepBuilder::distributed_optimizer_bytes() const {
  double bytes = static_cast<double>(plan_.master_bytes) * fsdp::optimizer_states(cfg_.training.optimizer);
  if (plan_.param_bytes != plan_.master_bytes) bytes += plan_.master_bytes;
  if (plan_.reduce_bytes != plan_.master_bytes) bytes += plan_.master_bytes;
  return bytes;
}

void FsdpStepBuilder::fill_info() {
  GraphInfo& info = g_.info;
  info.scenario = cfg_.name;
  info.world_size = plan_.world_size;
  info.gpus_per_node = cfg_.cluster.topology.node.gpus;
  info.shard_group = plan_.shard_group;
  info.replicate_group = plan_.replicate_group;
  info.reshard_group = plan_.reshard_group;
  info.tp_group = plan_.tp_group;
  info.pp_group = plan_.pp_group;
  info.cp_group = cfg_.parallelism.cp;
  info.steps = steps_;
  info.micro_steps = micro_steps_;
  // A TP group shares its micro-batch, and a pipeline's stages each run all of it.
  info.tokens_per_micro_step = batch_.tokens() / plan_.tp_group / plan_.pp_group;
  std::int64_t shard = 0;
  std::int64_t whole = 0;
  for (const auto& u : plan_.units) {
    shard += plan_.traits.shards_params ? u.shard_numel : u.numel;
    whole += u.padded_numel;
  }
  const auto state = fsdp::model_state_bytes(static_cast<double>(shard), 1, plan_.master_bytes, cfg_.training.optimizer);
  const Pool pool = offload_ ? Pool::host : Pool::compute;
  if (shards_optimizer_only()) {
    info.initial_memory = {
        {MemCategory::sharded_params, static_cast<double>(whole) * plan_.param_bytes, false, pool},
        {MemCategory::optimizer_state, static_cast<double>(whole / plan_.shard_group) * distributed_optimizer_bytes(), false, pool}};
    return;
  }
  info.initial_memory = {{MemCategory::sharded_params, state.params, false, pool},
                         {MemCategory::optimizer_state, state.optimizer, false, pool}};
}

}  // namespace shardsim::graph
