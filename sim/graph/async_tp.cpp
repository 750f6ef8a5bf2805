// Async tensor parallelism (parallelism.tp_async): torch's micro-pipelined collective matmuls,
// which Inductor's micro_pipeline_tp pass puts in place of sequence parallelism's collectives
// (torch/_inductor/fx_passes/micro_pipeline_tp.py; torch.distributed._symmetric_memory):
//  - fused_all_gather_matmul: the matmuls reading an all-gather's output run on 1/n of their rows
//    at a time, the rank's own shard first, then each peer's as it arrives; the n - 1 arrivals
//    are steps in which every member of the TP group copies its shard to another over symmetric
//    memory (one `send` op over Group::tp per step, `shift` places apart);
//  - fused_matmul_reduce_scatter: the matmul whose output is reduce-scattered computes the rows
//    each peer owns, one peer at a time, each chunk copied to its owner as soon as it is done, its
//    own rows last; the owner then sums the n partial chunks (a memory-bound kernel: n chunks read,
//    one written).
// Which collectives fuse follows the pass's patterns: an all-gather with the matmuls that take its
// output as their left operand (the column-parallel linears after it: wq wk wv, w1 w3, output; in
// backward the row-parallel linear's grad_input dY W after the gradient's all-gather; not a float8
// GEMM that casts the gathered tensor itself, as rowwise does its input and grad_output), a
// reduce-scatter with the one matmul that produces it (the row-parallel linear, wo or w2, in
// forward; in backward the grad_input of a lone column-parallel linear, the output layer; Llama's
// wq wk wv and w1 w3 add their grad_inputs first, which the pattern does not match, so those
// reduce-scatters stay NCCL's). Under activation checkpointing the rerun collectives fuse with
// the matmuls that rerun (under per-op selective checkpointing the all-gather with every second
// column-parallel linear, the reduce-scatters are saved). Collectives it does not fuse, and
// context parallelism's, stay as they are (step_builder.cpp tp_collective).
// Transformer Engine's userbuffers (tp_async_impl: userbuffers; Megatron's --tp-comm-overlap,
// transformer_engine/pytorch/module/base.py initialize_ub) chunk the same all-gathers
// (ring_exchange: qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad) and forward reduce-scatters
// (pipeline: proj_fprop, fc2_fprop) as above; every gradient reduce-scatter after a
// column-parallel linear runs instead beside that linear's weight-gradient GEMMs ('bulk':
// qkv_wgrad, fc1_wgrad), whether one matmul or several produce it.
#include <fmt/format.h>

#include <algorithm>

#include "graph/step_builder.hpp"

namespace shardsim::graph {
namespace {

// The matmuls a segment starts with: those reading the all-gather before it.
std::size_t leading_matmuls(const fsdp::Segment& s) {
  std::size_t n = 0;
  while (n < s.kernels.size() && s.kernels[n].kind == model::KernelKind::matmul) ++n;
  return n;
}

// Which of a segment's leading matmuls the pass fuses with the all-gather before them: those
// whose left operand is the gathered tensor itself (_find_consumer_matmuls: the all-gather
// result's mm and _scaled_mm users), bf16 GEMMs or float8 ones whose input was cast before the
// gather (Float8ColwiseParallel, tensorwise); a float8 linear that casts the gathered tensor
// itself (rowwise) reads the cast instead, and stays apart (pytorch/pytorch#149990). When both
// kinds read it, none fuse: the pass fuses one kind of matmul at a time.
std::vector<char> gather_readers(const fsdp::Segment& s) {
  std::vector<char> reads(leading_matmuls(s), 0);
  bool plain = false;
  bool scaled = false;
  for (std::size_t i = 0; i < reads.size(); ++i) {
    const model::Kernel& k = s.kernels[i];
    if (k.float8 == model::Float8Recipe::none) {
      reads[i] = 1;
      plain = true;
    } else if (k.float8_prepared_input >= 0) {
      reads[i] = 1;
      scaled = true;
    }
  }
  if (plain && scaled) std::fill(reads.begin(), reads.end(), 0);
  return reads;
}

bool any(const std::vector<char>& v) {
  return std::find(v.begin(), v.end(), 1) != v.end();
}

bool ends_with_matmul(const fsdp::Segment& s) {
  return !s.kernels.empty() && s.kernels.back().kind == model::KernelKind::matmul;
}

// One chunk of a micro-pipelined collective matmul: the GEMMs on 1/n of their rows.
Work chunk_of(const std::vector<Gemm>& gemms, int n) {
  Work w;
  for (Gemm g : gemms) {
    g.m /= n;
    w.gemms.push_back(g);
    w.launches += 1;
  }
  return w;
}

// A matmul's work without its GEMM (its float8 casts) when the GEMM runs chunked.
Work without_gemms(Work w) {
  w.launches -= static_cast<int>(w.gemms.size());
  w.gemms.clear();
  return w;
}

}  // namespace

void FsdpStepBuilder::find_fused_regions() {
  const std::size_t n = plan_.segments.size();
  fused_gather_.assign(n, -1);
  fused_scatter_.assign(n, -1);
  fused_tp_.assign(n, 0);
  ring_of_.assign(n, -1);
  const auto& trace = plan_.forward;
  // Context parallelism: the K/V gather and the attention after it are torch's ring attention.
  for (std::size_t i = 0; i + 1 < trace.size(); ++i) {
    if (trace[i].kind != fsdp::TraceEvent::Kind::compute || trace[i + 1].kind != fsdp::TraceEvent::Kind::compute) continue;
    const fsdp::Segment& cp = plan_.segments[static_cast<std::size_t>(trace[i].segment)];
    const fsdp::Segment& next = plan_.segments[static_cast<std::size_t>(trace[i + 1].segment)];
    if (!cp.tp_comm || !cp.kernels.front().context_parallel || next.tp_comm || next.unit != cp.unit) continue;
    if (next.kernels.empty() || next.kernels.front().kind != model::KernelKind::attention) continue;
    at(ring_of_, trace[i + 1].segment) = trace[i].segment;
    at(fused_tp_, trace[i].segment) = 1;
  }
  if (!cfg_.parallelism.tp_async || plan_.tp_group < 2) return;
  const auto segment = [&](std::size_t i) -> const fsdp::Segment& { return plan_.segments[static_cast<std::size_t>(trace[i].segment)]; };
  // The compute segment at trace position i, in the unit of `tp`, or -1.
  const auto compute_at = [&](std::size_t i, const fsdp::Segment& tp) {
    if (trace[i].kind != fsdp::TraceEvent::Kind::compute) return -1;
    const fsdp::Segment& s = segment(i);
    return !s.tp_comm && s.unit == tp.unit ? trace[i].segment : -1;
  };
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace[i].kind != fsdp::TraceEvent::Kind::compute) continue;
    const fsdp::Segment& tp = segment(i);
    if (!tp.tp_comm || tp.kernels.front().context_parallel) continue;
    const model::TpComm c = tp.kernels.front().tp_forward;
    if (c == model::TpComm::all_gather && i + 1 < trace.size()) {
      const int x = compute_at(i + 1, tp);
      if (x >= 0 && any(gather_readers(plan_.segments[static_cast<std::size_t>(x)]))) {
        at(fused_gather_, x) = trace[i].segment;
        at(fused_tp_, trace[i].segment) = 1;
      }
    }
    if (c == model::TpComm::reduce_scatter && i > 0) {
      const int x = compute_at(i - 1, tp);
      if (x < 0) continue;
      const fsdp::Segment& s = plan_.segments[static_cast<std::size_t>(x)];
      // A segment of matmuls only, all reading the gather, has no trailing matmul of its own.
      const bool taken = at(fused_gather_, x) >= 0 && leading_matmuls(s) == s.kernels.size();
      if (ends_with_matmul(s) && !taken) {
        at(fused_scatter_, x) = trace[i].segment;
        at(fused_tp_, trace[i].segment) = 1;
      }
    }
  }
}

bool FsdpStepBuilder::fused_away(int segment) const {
  return fused_tp_[static_cast<std::size_t>(segment)] != 0;
}

// The n - 1 copy steps of a fused all-gather, after the shard is produced (the last compute op,
// and the collective the next compute would wait for).
std::vector<int> FsdpStepBuilder::gather_copies(const fsdp::Segment& tp, std::string_view note, int u) {
  const int n = plan_.tp_group;
  const double bytes = tp_bytes(tp, OpKind::all_gather) / n;
  const int input = io_.last(Stream::compute);
  std::vector<int> out;
  for (int j = 1; j < n; ++j) {
    const int id = issue(shift_send(Group::tp, j, bytes, Stream::tp, fmt::format("TP AG {}{} copy {}/{}", tp.name, note, j, n - 1), u));
    g_.add_edge(input, id, EdgeKind::data);
    g_.add_edge(tp_wait_, id, EdgeKind::data);
    out.push_back(id);
  }
  return out;
}

// The gathered tensor a fused all-gather returns is a strided view: the op gathers and multiplies
// the sequence-major rows (A_shard.movedim(gather_dim, 0)) and hands back A.movedim(0, gather_dim).
// Of DTensor's [b, s, h] activations (`reorders`) with more than one sequence, the weight-gradient
// GEMMs that read it again as rows (a reshape to [b s, h]), and the saved activation's expected
// strides, need a contiguous copy; one sequence a rank, the view is contiguous already.
void FsdpStepBuilder::strided_gather_copy(const fsdp::Segment& tp, bool reorders) {
  if (!reorders || batch_.sequences < 2) return;
  pending_reorder_ += tp_bytes(tp, OpKind::all_gather);  // with the next compute op
}

// The consuming GEMMs chunk by chunk: the own shard's rows need no copy, chunk j its copy j.
void FsdpStepBuilder::gathered_chunks(OpKind kind, const std::string& name, const std::vector<Gemm>& gemms, const std::vector<int>& copies,
                                      int u) {
  const int n = plan_.tp_group;
  for (int j = 0; j < n; ++j) {
    Op op = make(kind, Stream::compute, fmt::format("{} rows {}/{}", name, j + 1, n), u);
    op.work = chunk_of(gemms, n);
    const int id = compute(std::move(op), u);
    if (j > 0) g_.add_edge(copies[static_cast<std::size_t>(j - 1)], id, EdgeKind::data);
  }
}

// The producing GEMMs chunk by chunk, each peer's rows copied to it when done, the own rows last;
// then the sum of the n partial chunks, once every copy into this rank has landed.
void FsdpStepBuilder::scattered_chunks(OpKind kind, const std::string& name, const std::vector<Gemm>& gemms, const fsdp::Segment& tp,
                                       std::string_view note, int u) {
  const int n = plan_.tp_group;
  const double bytes = tp_bytes(tp, OpKind::reduce_scatter);
  int last_copy = -1;
  for (int j = 1; j <= n; ++j) {
    Op op = make(kind, Stream::compute, fmt::format("{} rows {}/{}", name, j, n), u);
    op.work = chunk_of(gemms, n);
    const int chunk = compute(std::move(op), u);
    if (j == n) break;
    last_copy = issue(shift_send(Group::tp, j, bytes / n, Stream::tp, fmt::format("TP RS {}{} copy {}/{}", tp.name, note, j, n - 1), u));
    g_.add_edge(chunk, last_copy, EdgeKind::data);
  }
  Op sum = make(kind, Stream::compute, fmt::format("TP RS {}{} sum", tp.name, note), u);
  sum.work = memory_work(bytes * (n + 1) / n, 1);
  const int id = compute(std::move(sum), u);
  g_.add_edge(last_copy, id, EdgeKind::data);
}

void FsdpStepBuilder::forward_fused(const fsdp::Segment& s, int segment, int u) {
  const int gather = at(fused_gather_, segment);
  const int scatter = at(fused_scatter_, segment);
  const std::vector<char> reads = gather >= 0 ? gather_readers(s) : std::vector<char>{};
  const std::size_t lead = reads.size();
  const std::size_t end = s.kernels.size() - (scatter >= 0 ? 1 : 0);
  const std::string name = "FWD " + s.name;
  Work rest;  // the segment's other kernels, and the fused matmuls' casts
  if (gather >= 0) {
    std::vector<Gemm> gemms;
    for (std::size_t i = 0; i < lead; ++i) {
      Work w;
      add_forward_work(w, s.kernels[i], batch_);
      if (reads[i] == 0) {  // reads the gathered tensor through its casts, after the fused op
        rest += w;
        continue;
      }
      gemms.push_back(forward_gemm(s.kernels[i], batch_));
      rest += without_gemms(std::move(w));
    }
    const fsdp::Segment& tp = plan_.segments[static_cast<std::size_t>(gather)];
    gathered_chunks(OpKind::forward, name, gemms, gather_copies(tp, "", u), u);
    // Saved for the weight gradients unless backward gathers it again.
    const model::Kernel& k = tp.kernels.front();
    if (!collective_recomputed(k, checkpoint_mode(s, cfg_.training))) strided_gather_copy(tp, k.tp_forward_reorders);
  }
  for (std::size_t i = lead; i < end; ++i) add_forward_work(rest, s.kernels[i], batch_);
  if (scatter >= 0) {
    Work w;
    add_forward_work(w, s.kernels.back(), batch_);
    rest += without_gemms(std::move(w));
  }
  Op op = make(OpKind::forward, Stream::compute, name, u);
  op.work = std::move(rest);
  save_activations(op, s);
  compute(std::move(op), u);
  if (scatter >= 0) {
    scattered_chunks(OpKind::forward, name, {forward_gemm(s.kernels.back(), batch_)}, plan_.segments[static_cast<std::size_t>(scatter)], "",
                     u);
  }
}

// In backward the segment runs, in order: the rerun of the all-gather before it with the leading
// matmuls that rerun; the rest of the recompute; the rerun of the reduce-scatter after it with
// its matmul; the gradient's all-gather (the reduce-scatter's backward) with the grad_input GEMM
// of the matmul that read it; the rest of the backward; the gradient's reduce-scatter (the
// all-gather's backward), with the grad_input GEMM of a lone leading matmul.
void FsdpStepBuilder::backward_fused(const fsdp::Segment& s, int segment, int u) {
  const int gather = at(fused_gather_, segment);
  const int scatter = at(fused_scatter_, segment);
  const model::AcMode mode = checkpoint_mode(s, cfg_.training);
  const std::vector<char> reads = gather >= 0 ? gather_readers(s) : std::vector<char>{};
  const std::size_t lead = reads.size();
  const std::size_t last = s.kernels.size() - 1;
  const std::string name = "BWD " + s.name;
  const fsdp::Segment* before = gather >= 0 ? &plan_.segments[static_cast<std::size_t>(gather)] : nullptr;
  const fsdp::Segment* after = scatter >= 0 ? &plan_.segments[static_cast<std::size_t>(scatter)] : nullptr;
  const bool rerun_gather = before != nullptr && collective_recomputed(before->kernels.front(), mode);
  const bool rerun_scatter = after != nullptr && collective_recomputed(after->kernels.front(), mode);
  const bool scatter_fuses = rerun_scatter && recomputed_in_backward(s.kernels.back(), mode);

  std::vector<Gemm> rerun_lead;
  std::vector<char> rerun_chunked(lead, 0);
  for (std::size_t i = 0; rerun_gather && i < lead; ++i) {
    if (reads[i] == 0 || !recomputed_in_backward(s.kernels[i], mode)) continue;
    rerun_lead.push_back(forward_gemm(s.kernels[i], batch_));
    rerun_chunked[i] = 1;
  }
  // The gradient's all-gather fuses with the row-parallel linear's grad_input when that GEMM reads
  // it as it is: bf16, or float8 cast before the gather (torchao's Float8RowwiseParallel casts
  // grad_output on its shard, so the gather moves float8: all_gather_share); a float8 linear
  // that casts the gathered gradient itself (rowwise, on torchtitan's bf16 plan) does not fuse.
  const bool grad_gather_fuses =
      after != nullptr && (s.kernels.back().float8 == model::Float8Recipe::none || after->kernels.front().all_gather_share < 1.0);
  if (rerun_gather && rerun_lead.empty()) tp_op(*before, before->kernels.front().tp_forward, " (recompute)", u);
  if (!rerun_lead.empty()) {
    gathered_chunks(OpKind::backward, name + " (recompute)", rerun_lead, gather_copies(*before, " (recompute)", u), u);
    strided_gather_copy(*before, before->kernels.front().tp_forward_reorders);
  }

  Work recompute;
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    const model::Kernel& k = s.kernels[i];
    if (!recomputed_in_backward(k, mode)) continue;
    Work w;
    add_forward_work(w, k, batch_, recomputes_casts(k, mode));
    const bool chunked = (i < lead && rerun_chunked[i] != 0) || (i == last && scatter_fuses);
    recompute += chunked ? without_gemms(std::move(w)) : w;
  }
  if (recompute.launches > 0) {
    Op op = make(OpKind::backward, Stream::compute, name + " (recompute)", u);
    op.work = std::move(recompute);
    compute(std::move(op), u);
  }
  if (scatter_fuses) {
    scattered_chunks(OpKind::backward, name + " (recompute)", {forward_gemm(s.kernels.back(), batch_)}, *after, " (recompute)", u);
  } else if (rerun_scatter) {
    tp_op(*after, after->kernels.front().tp_forward, " (recompute)", u);
  }

  if (grad_gather_fuses) {
    gathered_chunks(OpKind::backward, name, {grad_input_gemm(s.kernels.back(), batch_)}, gather_copies(*after, "", u), u);
    strided_gather_copy(*after, after->kernels.front().tp_backward_reorders);
  } else if (after != nullptr) {
    tp_op(*after, after->kernels.front().tp_backward, "", u);
  }
  const bool scatters = before != nullptr && before->kernels.front().tp_backward == model::TpComm::reduce_scatter;
  const bool bulk = scatters && cfg_.parallelism.tp_userbuffers;
  const bool lone = scatters && !bulk && lead == 1;
  Work grads;
  // bulk: the weight gradients of the column-parallel matmuls (every matmul but a trailing
  // row-parallel one), which read the gathered input and not the gradient being reduce-scattered.
  Work weight_grads;
  for (std::size_t i = s.kernels.size(); i-- > 0;) {
    if (bulk && s.kernels[i].kind == model::KernelKind::matmul && !(i == last && after != nullptr)) {
      add_backward_work(grads, s.kernels[i], batch_, true, false, true);
      add_backward_work(weight_grads, s.kernels[i], batch_, false, true, false);
      continue;
    }
    const bool chunked = (i == last && grad_gather_fuses) || (i == 0 && lone);
    add_backward_work(grads, s.kernels[i], batch_, !chunked, true, true);
  }
  // Megatron's sequence-parallel linears keep only their input's shard (tp_save_gathered_input:
  // false): it is all-gathered again for the weight gradients while the input-gradient GEMMs run
  // (TE's bulk qkv_dgrad / fc1_dgrad), on the TP stream ahead of the reduce-scatter.
  int regather = -1;
  if (bulk && !cfg_.parallelism.tp_save_gathered) {
    regather = tp_op(*before, model::TpComm::all_gather, " (re-gather)", u, TpWait::overlapped);
  }
  Op op = make(OpKind::backward, Stream::compute, name, u);
  op.work = std::move(grads);
  backward_memory(op, s, u, mode, BackwardPart::all);
  reduce_replicated(s, compute(std::move(op), u));
  if (lone) {
    scattered_chunks(OpKind::backward, name, {grad_input_gemm(s.kernels.front(), batch_)}, *before, "", u);
  } else if (bulk) {
    // Transformer Engine's bulk overlap (qkv_wgrad, fc1_wgrad; Megatron's own column-parallel
    // linear does the same): the gradient's reduce-scatter starts as soon as the grad_input GEMMs
    // are done and the weight-gradient GEMMs, which do not need it, run meanwhile; the next
    // segment waits for the reduce-scatter.
    const int grad_scatter = tp_op(*before, before->kernels.front().tp_backward, "", u, TpWait::overlapped);
    Op wgrad = make(OpKind::backward, Stream::compute, name + " (weight gradients)", u);
    wgrad.work = std::move(weight_grads);
    const int id = compute(std::move(wgrad), u);
    g_.add_edge(regather, id, EdgeKind::data);
    tp_wait_ = grad_scatter;
  } else if (before != nullptr) {
    tp_op(*before, before->kernels.front().tp_backward, "", u);
  }
}

}  // namespace shardsim::graph
