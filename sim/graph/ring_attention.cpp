// Context parallelism's attention as torch runs it (torch/distributed/tensor/experimental/
// _attention.py, _templated_ring_attention and its backward): each rank holds 1/cp of every
// sequence (two load-balanced chunks) and computes its queries against every rank's K and V in cp
// equal steps, its own K/V first, merging each step's partial output into an fp32 running output
// with its log-sum-exp (_SDPAMerger):
//  - cp_rotate allgather: K and V of every rank all-gathered once, while the own step runs;
//  - cp_rotate alltoall: passed around the ring, each rank's K/V sent on to the next while the
//    step on it runs (cp - 1 sends, each of one rank's K/V).
// The backward gathers or rotates K and V again, runs the cp steps' attention backward, and passes
// the K/V gradients around the ring in fp32 in both modes (the dK/dV rotater is always an
// all-to-all): after each step, the gradient arriving from the previous rank is added to this
// step's and sent on, while the next step runs; after the cp-th send each rank holds its own.
// Memory traffic of the eager copies, merges and accumulations, per element of the rank's queries
// (tokens x heads x head_dim; K and V, after repeat_kv, are each as wide), priced for the last
// rank of the CP group: load balancing gives it, at every step after its own, all its queries
// against the first half of the keys (where rank 0 takes the second half of its queries against
// all keys), so its merges and gradient updates touch whole tensors where the others touch
// halves; ranks pace each other at the ring's collectives, so the step is its. From the source:
//   forward (and its rerun under full checkpointing): K and V made contiguous on entry (their
//   [b, h, s, d] view of the [b, s, h, d] projection: 2 read + 2 written each, 8); K and V
//   concatenated for the rotation before every step but the last (8; the all-gather uses only the
//   first, the code makes it every time); the first step's output to fp32 (2 read + 4 written: 6);
//   each later step's merge: block to fp32 (6), out - block (12), x sigmoid(lse difference) (8:
//   the lse factor is 1/head_dim of the tensor), out - that (12): 38; the result back to bf16 (6);
//   backward: K and V made contiguous again (8), the fp32 accumulators of dQ, dK, dV zeroed (12),
//   the K/V concatenation before every step but the last (8); each step dQ added to its fp32
//   accumulator (2 + 4 read, 4 written: 10); dK, dV: the first step adds whole (20), each later
//   one adds its first halves (10: half the keys) and concatenates the halves back (16:
//   _partial_update's torch.cat), then concatenates dK and dV for the send (16); after the cp-th
//   send, the compute stream waits for the own gradient and casts it and dQ to bf16 (12 + 6).
// Memory the ring holds beyond the saved activations, in q (the rank's queries in bf16, what its
// attention output takes) and kv (the rank's K and V in bf16, as wide as the queries):
//   K and V: allgather, the gathered buffer (cp kv) and the concatenated copy each step sends or
//   gathers (kv); alltoall, the copy sent, the buffer arriving and the one in use (3 kv);
//   forward: the fp32 running output (2q) from the first step to the last; during a step its
//   output (q), that output in fp32 (2q) and the merge's two fp32 temporaries (4q): 7q;
//   backward: fp32 accumulators of dQ (2q) and of dK, dV (2kv), the dK / dV concatenation sent
//   (2kv) and the one arriving (2kv); during a step the attention backward's dQ, dK, dV (q + kv).
#include <fmt/format.h>

#include "graph/step_builder.hpp"

namespace shardsim::graph {
namespace {

constexpr double kKvContiguous = 8.0;   // K and V made contiguous on entry
constexpr double kKvConcat = 8.0;       // K and V concatenated for the rotation
constexpr double kToFp32 = 6.0;         // the output to fp32 (and back to bf16)
constexpr double kMerge = 38.0;         // a later step's merge into the fp32 running output
constexpr double kZeroGrads = 12.0;     // the fp32 dQ, dK, dV accumulators zeroed
constexpr double kQueryGradAdd = 10.0;  // a step's dQ added to the accumulator
constexpr double kKvGradFirst = 20.0;   // the first step's dK, dV added whole
constexpr double kKvGradLater = 26.0;   // a later step's: first halves added, halves concatenated back
constexpr double kKvGradSend = 16.0;    // dK, dV concatenated for the send
constexpr double kFinalCasts = 18.0;    // the own dK, dV (12) and dQ (6) back to bf16
constexpr int kMergeLaunches = 5;
constexpr double kForwardHeld = 2.0;     // x q: the fp32 running output
constexpr double kForwardStep = 7.0;     // x q: a step's output, its fp32 copy, the merge's temporaries
constexpr double kBackwardHeldQ = 2.0;   // x q: the fp32 dQ accumulator
constexpr double kBackwardHeldKv = 6.0;  // x kv: fp32 dK, dV accumulators, the concatenation sent, the one arriving

// The elements of a rank's attention output (or its queries): tokens x heads x head_dim.
double query_elements(const model::Kernel& attention, const Batch& b) {
  return static_cast<double>(b.tokens()) * attention.heads * attention.head_dim;
}

// Step i of n's memory: `held` from the first step's start to the last one's end, `transient`
// during each step.
void ring_step_memory(Op& op, int i, int n, double held, double transient) {
  if (i == 0) op.memory.push_back({MemCategory::activations, held, false, Pool::compute});
  op.memory.push_back({MemCategory::activations, transient, false, Pool::compute});
  op.memory.push_back({MemCategory::activations, -transient, true, Pool::compute});
  if (i == n - 1) op.memory.push_back({MemCategory::activations, -held, true, Pool::compute});
}

// The segment without its first kernel (the attention the ring runs).
fsdp::Segment after_attention(const fsdp::Segment& s) {
  fsdp::Segment rest = s;
  rest.kernels.erase(rest.kernels.begin());
  return rest;
}

}  // namespace

// When each step's K and V are here: -1 for the own step, else the all-gather or the send that
// brings them. `note` names the pass ("", " (recompute)", " (backward)").
std::vector<int> FsdpStepBuilder::ring_kv(const fsdp::Segment& cp, std::string_view note, int u) {
  const int n = cfg_.parallelism.cp;
  const double gathered = tp_bytes(cp, OpKind::all_gather);  // every rank's K and V
  const int input = io_.last(Stream::compute);
  std::vector<int> arrive(static_cast<std::size_t>(n), -1);
  const auto wire = [&](Op op) {
    const int id = issue(std::move(op));
    g_.add_edge(input, id, EdgeKind::data);
    g_.add_edge(tp_wait_, id, EdgeKind::data);
    return id;
  };
  if (!cfg_.parallelism.cp_alltoall) {
    Op ag = make(OpKind::all_gather, Stream::cp, fmt::format("CP AG {}{}", cp.name, note), u);
    ag.group = Group::cp;
    ag.bytes = gathered;
    const int id = wire(std::move(ag));
    for (int i = 1; i < n; ++i) arrive[static_cast<std::size_t>(i)] = id;
    return arrive;
  }
  for (int i = 1; i < n; ++i) {
    arrive[static_cast<std::size_t>(i)] =
        wire(shift_send(Group::cp, 1, gathered / n, Stream::cp, fmt::format("CP send {}{} {}/{}", cp.name, note, i, n - 1), u));
  }
  return arrive;
}

// The bytes of the rank's K and V (bf16, as wide as its queries) and what the rotation holds of them.
FsdpStepBuilder::RingBuffers FsdpStepBuilder::ring_buffers(const fsdp::Segment& cp) const {
  const int n = cfg_.parallelism.cp;
  const double kv = tp_bytes(cp, OpKind::all_gather) / n;
  return {kv, kv / 2, cfg_.parallelism.cp_alltoall ? 3 * kv : (n + 1) * kv};
}

void FsdpStepBuilder::ring_forward(const model::Kernel& attention, const fsdp::Segment& cp, OpKind kind, const std::string& name, int u) {
  const int n = cfg_.parallelism.cp;
  const auto arrive = ring_kv(cp, kind == OpKind::forward ? "" : " (recompute)", u);
  const double elements = query_elements(attention, batch_);
  const RingBuffers b = ring_buffers(cp);
  const double held = b.rotation + kForwardHeld * b.q;
  for (int i = 0; i < n; ++i) {
    Op op = make(kind, Stream::compute, fmt::format("{} ring step {}/{}", name, i + 1, n), u);
    op.work.attention.push_back(AttentionCall{batch_.sequences, batch_.seq_len, attention.heads, attention.kv_heads, attention.head_dim,
                                              attention.causal, false, batch_.cp, n});
    const bool first = i == 0;
    const bool last = i == n - 1;
    op.work.launches = 1 + (first ? 3 : kMergeLaunches) + 1;  // attention, copies or merge, the cat or the cast
    op.work.memory_bytes = ((first ? kKvContiguous + kToFp32 : kMerge) + (last ? kToFp32 : kKvConcat)) * elements;
    ring_step_memory(op, i, n, held, kForwardStep * b.q);
    const int id = compute(std::move(op), u);
    g_.add_edge(arrive[static_cast<std::size_t>(i)], id, EdgeKind::data);
  }
}

void FsdpStepBuilder::ring_backward(const model::Kernel& attention, const fsdp::Segment& cp, const std::string& name, int u) {
  const int n = cfg_.parallelism.cp;
  const auto arrive = ring_kv(cp, " (backward)", u);
  const double elements = query_elements(attention, batch_);
  const RingBuffers b = ring_buffers(cp);
  const double gradients = 2.0 * b.kv;  // one rank's dK and dV in fp32
  const double held = b.rotation + kBackwardHeldQ * b.q + kBackwardHeldKv * b.kv;
  int sent = -1;
  for (int i = 0; i < n; ++i) {
    Op step = make(OpKind::backward, Stream::compute, fmt::format("{} ring step {}/{}", name, i + 1, n), u);
    step.work.attention.push_back(AttentionCall{batch_.sequences, batch_.seq_len, attention.heads, attention.kv_heads, attention.head_dim,
                                                attention.causal, true, batch_.cp, n});
    const bool first = i == 0;
    const bool last = i == n - 1;
    step.work.launches = 2 + (first ? 5 : 0) + (last ? 0 : 1);
    step.work.memory_bytes = ((first ? kKvContiguous + kZeroGrads : 0.0) + (last ? 0.0 : kKvConcat) + kQueryGradAdd) * elements;
    ring_step_memory(step, i, n, held, b.q + b.kv);
    const int id = compute(std::move(step), u);
    g_.add_edge(arrive[static_cast<std::size_t>(i)], id, EdgeKind::data);
    Op add = make(OpKind::backward, Stream::compute, fmt::format("{} dK dV {}/{}", name, i + 1, n), u);
    add.work = memory_work(((first ? kKvGradFirst : kKvGradLater) + kKvGradSend) * elements, first ? 3 : 5);
    const int added = compute(std::move(add), u);
    g_.add_edge(sent, added, EdgeKind::data);  // the gradient from the previous rank
    sent = issue(shift_send(Group::cp, 1, gradients, Stream::cp, fmt::format("CP send dK dV {} {}/{}", cp.name, i + 1, n), u));
    g_.add_edge(added, sent, EdgeKind::data);
  }
  tp_wait_ = sent;  // the own K/V gradient, back after the cp-th send: the compute stream waits for it
  Op cast = make(OpKind::backward, Stream::compute, fmt::format("{} dK dV dQ to bf16", name), u);
  cast.work = memory_work(kFinalCasts * elements, 2);
  (void)compute(std::move(cast), u);
}

void FsdpStepBuilder::forward_ring(const fsdp::Segment& s, int segment, int u) {
  const fsdp::Segment& cp = plan_.segments[static_cast<std::size_t>(at(ring_of_, segment))];
  ring_forward(s.kernels.front(), cp, OpKind::forward, "FWD " + s.name, u);
  const fsdp::Segment rest = after_attention(s);
  if (at(fused_scatter_, segment) >= 0) {
    forward_fused(rest, segment, u);
  } else {
    plain_forward(rest, u);
  }
}

// Backward: the rerun of the ring's forward where checkpointing reruns attention, what follows
// attention (its recompute and backward, and the segment's memory), then the ring's backward.
void FsdpStepBuilder::backward_ring(const fsdp::Segment& s, int segment, int u) {
  const fsdp::Segment& cp = plan_.segments[static_cast<std::size_t>(at(ring_of_, segment))];
  const model::Kernel& attention = s.kernels.front();
  const fsdp::Segment rest = after_attention(s);
  if (part_ == BackwardPart::weight) {  // attention has no weights: only what follows it
    plain_backward(rest, u);
    return;
  }
  const std::string name = "BWD " + s.name;
  const model::AcMode mode = checkpoint_mode(s, cfg_.training);
  if (recomputed_in_backward(attention, mode)) ring_forward(attention, cp, OpKind::backward, name + " (recompute)", u);
  if (at(fused_scatter_, segment) >= 0) {
    backward_fused(rest, segment, u);
  } else {
    plain_backward(rest, u);
  }
  ring_backward(attention, cp, name, u);
}

}  // namespace shardsim::graph
