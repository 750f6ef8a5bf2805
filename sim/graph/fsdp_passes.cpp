// The passes of one step: forward (walk the trace) and backward (walk it reversed: exit =
// pre-backward, enter = post-backward); the reduction of gradients and the optimizer step they
// lead to are in fsdp_reduction.cpp.
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
  check_no_pending_reorder();
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
  check_no_pending_reorder();
  const int out = tp_wait_ >= 0 ? tp_wait_ : last_compute_op_;
  tp_wait_ = -1;
  return out;
}

// torch.distributed.pipelining runs every backward of an FSDP2 stage with gradient sync and
// resharding off, and its REDUCE_GRAD action, after the stage's last backward, calls each FSDP
// state's post_backward in module order (the root's first): the unit's parameters freed, its
// gradients copied in and reduce-scattered, each copy-in after the previous reduce-scatter as
// always. So none of the stage's reductions overlaps its backward compute (stage.py
// perform_reduce_grad; before 2025 the same calls ended backward_maybe_with_nosync).
void FsdpStepBuilder::pipeline_reduce_grad(int step) {
  if (schedule_reductions_.empty()) return;
  step_ = step;
  micro_ = micro_steps_ - 1;
  io_.begin_micro_step(step, micro_, last_optimizer_);
  std::ranges::sort(schedule_reductions_);
  for (const int u : schedule_reductions_) {
    at(last_compute_, u) = io_.last(Stream::compute);  // freed in the CPU's order: after what it issued last
    reshard(u, Phase::backward);
    reduce_scatter(u);
  }
  schedule_reductions_.clear();
}

// The schedule's step() returns the last stage's outputs merged (torch.cat of the chunks it kept,
// PipelineScheduleSingle / Multi: _merge_outputs) once its micro-batches are done, before the
// loop clips the gradients: a copy of them all, made and (torchtitan drops it) freed at once.
void FsdpStepBuilder::merge_stage_outputs(int wait) {
  double bytes = 0;
  for (const double b : retained_outputs_) bytes += b;
  if (bytes <= 0) return;
  Op op = make(OpKind::copy, Stream::compute, fmt::format("merge outputs {}", step_), -1);
  op.work = memory_work(2 * bytes, 1);
  op.memory = {{MemCategory::loss, bytes, false, Pool::compute}, {MemCategory::loss, -bytes, true, Pool::compute}};
  const int id = issue(std::move(op));
  g_.add_edge(wait, id, EdgeKind::data);
  last_compute_op_ = id;
}

// Held from the start of the micro-batch's loss, below what the loss allocates (the output layer
// made them before it: its first effect); freed with the optimizer step (the next step's schedule
// clears them before its first forward).
void FsdpStepBuilder::retain_stage_output(double bytes) {
  if (!torch_pipelining() || bytes <= 0 || last_compute_op_ < 0) return;
  auto& memory = g_.op(last_compute_op_).memory;
  memory.push_back({MemCategory::loss, bytes, false, Pool::compute});
  std::rotate(memory.rbegin(), memory.rbegin() + 1, memory.rend());  // to the front
  retained_outputs_.push_back(bytes);
}

void FsdpStepBuilder::pipeline_optimizer(int step, int wait) {
  step_ = step;
  merge_stage_outputs(wait);
  optimizer();
  g_.add_edge(wait, last_optimizer_, EdgeKind::data);
  for (const double bytes : retained_outputs_) g_.op(last_optimizer_).memory.push_back({MemCategory::loss, -bytes, true, Pool::compute});
  retained_outputs_.clear();
}

// ---- forward -------------------------------------------------------------------------------

// The next `forward_prefetch` units to be entered after trace position `from`.
std::vector<int> FsdpStepBuilder::forward_prefetch_targets(const std::vector<TraceEvent>& events, std::size_t from) const {
  std::vector<int> out;
  for (std::size_t i = from + 1; i < events.size() && static_cast<int>(out.size()) < fsdp_.forward_prefetch; ++i) {
    if (events[i].kind == TraceEvent::Kind::enter) out.push_back(events[i].unit);
  }
  return out;
}

// The forward trace with the root's post-forward before the loss: the loss is computed outside
// the model, on its output, so the root's forward ends before it, and in backward (this reversed)
// the root's pre-backward hook, registered on that output, fires only after the loss's backward.
std::vector<TraceEvent> FsdpStepBuilder::forward_events() const {
  std::vector<TraceEvent> out = plan_.forward;
  if (out.size() > 1 && out.back().kind == TraceEvent::Kind::exit) {
    std::size_t k = out.size() - 1;
    while (k > 0 && out[k - 1].kind == TraceEvent::Kind::compute && plan_.segments[static_cast<std::size_t>(out[k - 1].segment)].is_loss)
      --k;
    std::rotate(out.begin() + static_cast<std::ptrdiff_t>(k), out.end() - 1, out.end());
  }
  return out;
}

void FsdpStepBuilder::forward() {
  // FSDP1 records the forward order during the first iteration, so it cannot prefetch then.
  const bool fwd_prefetch = fsdp_.forward_prefetch > 0 && (v2_ || step_ > 0);
  const std::vector<TraceEvent> events = forward_events();
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    switch (e.kind) {
      case TraceEvent::Kind::enter:
        unshard(e.unit, Phase::forward, -1);
        wait_unshard(e.unit, Phase::forward);
        if (fwd_prefetch) prefetch(forward_prefetch_targets(events, i), Phase::forward, at(gather_of_, e.unit));
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
// And what the training loop holds of its output (hold_loop_output).
// A pipeline schedule keeps its last stage's output (retain_stage_output), which the loss reads.
void FsdpStepBuilder::save_activations(Op& op, const fsdp::Segment& s) const {
  forward_memory(op, s, saved_bytes(s, checkpoint_mode(s, cfg_.training)), batch_, torch_pipelining());
}

// Every checkpointing mode keeps a block's input (the first norm's, or the checkpoint's), and
// the stage's first block's input is the buffer the pipeline received it in. The stage's first
// block segment reaches saved_bytes as the plan's own (only ring attention passes copies, of
// segments that start with attention, never a block's first).
void FsdpStepBuilder::set_received_input(double bytes) {
  const auto first = std::ranges::find_if(plan_.segments, [](const fsdp::Segment& x) { return x.in_block; });
  received_input_ = bytes;
  received_into_ = first != plan_.segments.end() ? &*first : nullptr;
}

double FsdpStepBuilder::saved_bytes(const fsdp::Segment& s, model::AcMode mode) const {
  const double saved = activation_bytes(s.activation.saved, mode, batch_);
  return &s == received_into_ ? std::max(0.0, saved - received_input_) : saved;
}

// ---- backward ------------------------------------------------------------------------------

// The forward trace reversed. With backward_hook_order: pre_first, unit k-1's pre-backward fires
// before unit k's post-backward (the autograd engine may order them either way; FSDP1 only).
std::vector<TraceEvent> FsdpStepBuilder::backward_events() const {
  std::vector<TraceEvent> out = forward_events();
  std::ranges::reverse(out);
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
        if (!v2_ && plan_.traits.shards_params) flatten_grads(e.unit);
        // Parameters are freed unless no_sync keeps them for the next micro-step (SHARD_GRAD_OP),
        // or a pipeline schedule holds them: it turns resharding after backward off for every
        // micro-batch, and its REDUCE_GRAD frees them with the reduction (pipeline_reduce_grad).
        const bool keep = schedule_reduces() || (!syncing() && !unit(e.unit).reshard_after_forward);
        if ((plan_.traits.shards_params || casts_params()) && !keep) reshard(e.unit, Phase::backward);
        if (mode == config::BackwardPrefetch::post) prefetch(backward_prefetch_targets(e.unit), Phase::backward, at(gather_of_, e.unit));
        if (plan_.traits.shards_params) {
          reduce(e.unit);
        } else {
          // DDP's gradients (param.grad, Megatron's grad buffer) stay and accumulate over the
          // micro-steps and pipeline micro-batches until zero_grad after the optimizer step.
          if (has_params(e.unit)) accumulate_kept_grads(e.unit);
          at(grads_alive_, e.unit) = has_params(e.unit);
        }
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
  const double saved = saved_bytes(s, mode);
  if (part != BackwardPart::weight) backward_transient(op, s, transient, batch_);
  if (part == BackwardPart::input) return;
  if (saved > 0) op.memory.push_back({act, -saved, true, Pool::compute});
  // FSDP2 accumulating in a wider reduce dtype moves each micro-step's gradient into the
  // accumulator, so every backward makes a new one (upcast_accumulation()); DDP accumulates in
  // its own gradients.
  const bool new_grads = !at(grads_alive_, u) || (v2_ && plan_.traits.shards_params && upcasts_accumulated_grads());
  if (s.numel > 0 && unit(u).numel > 0 && new_grads) {
    if (!plan_.traits.shards_params) {
      // PyTorch DDP's gradients in the parameters' dtype (the master one); Megatron's main
      // gradients in the reduce dtype (its contiguous grad buffer).
      const double bytes = static_cast<double>(s.numel) * (megatron_buffers() ? plan_.reduce_bytes : plan_.master_bytes);
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
  info.tokens_per_micro_step = static_cast<double>(batch_.tokens()) / plan_.tp_group / plan_.pp_group;
  std::int64_t shard = 0;
  std::int64_t whole = 0;
  for (const auto& u : plan_.units) {
    shard += plan_.traits.shards_params ? u.shard_numel : u.numel;
    whole += u.padded_numel;
  }
  const auto state = fsdp::model_state_bytes(static_cast<double>(shard), 1, plan_.master_bytes, cfg_.training.optimizer);
  const Pool pool = offload_ ? Pool::host : Pool::compute;
  if (megatron_buffers()) {
    info.initial_memory = {
        {MemCategory::sharded_params, static_cast<double>(whole) * plan_.param_bytes, false, pool},
        {MemCategory::optimizer_state, static_cast<double>(whole / plan_.shard_group) * distributed_optimizer_bytes(), false, pool}};
  } else {
    info.initial_memory = {{MemCategory::sharded_params, state.params, false, pool}};
    if (!lazy_optimizer_state()) info.initial_memory.push_back({MemCategory::optimizer_state, state.optimizer, false, pool});
  }
  held_before_step(info.initial_memory, plan_, batch_);
}

}  // namespace shardsim::graph
