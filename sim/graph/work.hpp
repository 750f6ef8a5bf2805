// Turns a segment's kernels into the Work of its forward and backward ops for one micro-batch.
#pragma once

#include <cstdint>
#include <vector>

#include "config/scenario.hpp"
#include "fsdp/plan.hpp"
#include "graph/op.hpp"

namespace shardsim::graph {

struct Batch {
  std::int64_t sequences = 1;  // micro-batch size
  std::int64_t seq_len = 1;
  int cp = 1;                                                                     // context parallelism: a rank holds 1/cp of each sequence
  [[nodiscard]] std::int64_t tokens() const { return sequences * seq_len / cp; }  // this rank's
};

// The sequences of one micro-batch a rank runs: training.micro_batch, or under a pipeline its
// split into parallelism.pp_microbatches (one sequence each where the count is left to the
// schedule).
[[nodiscard]] std::int64_t micro_batch_sequences(const config::ScenarioConfig& s);

// The checkpointing mode that applies to a segment (blocks only; none elsewhere).
[[nodiscard]] model::AcMode checkpoint_mode(const fsdp::Segment& s, const config::TrainingConfig& t);
// Bytes of one of a segment's Activation figures under `mode`, for one micro-batch.
[[nodiscard]] double activation_bytes(const std::array<double, 3>& per_mode, model::AcMode mode, const Batch& b);

[[nodiscard]] Work forward_work(const fsdp::Segment& s, const Batch& b);

// What the training loop holds of a segment's output (model::Activation::held_by_loop), on its
// forward op: this micro-step's copy from the op's start, the previous one's freed at its end,
// when the model's forward returns and the loop binds the name to the new one. The first
// micro-step frees the previous step's last copy, which `initial` holds (held_before_step).
void hold_loop_output(Op& op, const fsdp::Segment& s, const Batch& b);
void held_before_step(std::vector<MemEffect>& initial, const fsdp::Plan& plan, const Batch& b);

// A segment's forward memory on its op, in the order PyTorch allocates it: the input the loop
// frees when the forward ends (model::Activation::input_freed_after; left out where something
// else holds it: `input_held`, a pipeline schedule keeping its stage's output), the forward's
// transient, the `saved` bytes; at the op's end the transient and that input are freed. Then
// what the loop holds of its output (hold_loop_output).
void forward_memory(Op& op, const fsdp::Segment& s, double saved, const Batch& b, bool input_held = false);
// A segment's backward transient (`bytes` for this micro-batch), allocated at the op's start as
// equal tensors no larger than model::Activation::largest_tensor, in turn, freed at its end.
void backward_transient(Op& op, const fsdp::Segment& s, double bytes, const Batch& b);

// Which part of a backward an op runs: all of it, or (zero-bubble schedules) the input gradients
// (the recompute, every kernel's backward but the matmuls' weight gradients) or those weight
// gradients alone (dW = dY^T X), later.
enum class BackwardPart { all, input, weight };

// Backward of a segment: first the recompute that `ac` asks for, then the
// gradients: two GEMMs per matmul (input and weight), the attention backward, and memory kernels.
[[nodiscard]] Work backward_work(const fsdp::Segment& s, const Batch& b, model::AcMode ac, BackwardPart part = BackwardPart::all);

// One kernel's share of those (async TP splits a segment's op around its fused matmuls):
// its forward (`casts`: a float8 matmul's input and weight casts too), whether checkpointing
// `ac` reruns it in backward and with which casts, and its backward (`grad_input`: a matmul's
// dX = dY W too, not only dW = dY^T X and its casts).
void add_forward_work(Work& w, const model::Kernel& k, const Batch& b, bool casts = true);
[[nodiscard]] bool recomputed_in_backward(const model::Kernel& k, model::AcMode ac);
[[nodiscard]] bool recomputes_casts(const model::Kernel& k, model::AcMode ac);
// Whether checkpointing reruns a TP collective (tp_comm kernel `k`) in backward: full
// checkpointing all of them; per-op selective checkpointing the all-gathers only, since
// torchtitan's save list keeps reduce_scatter_tensor outputs but not all-gather outputs.
[[nodiscard]] bool collective_recomputed(const model::Kernel& k, model::AcMode ac);
void add_backward_work(Work& w, const model::Kernel& k, const Batch& b, bool grad_input = true, bool grad_weight = true, bool casts = true);
// A matmul's forward GEMM and its grad_input GEMM (rows: the batch's tokens).
[[nodiscard]] Gemm forward_gemm(const model::Kernel& k, const Batch& b);
[[nodiscard]] Gemm grad_input_gemm(const model::Kernel& k, const Batch& b);

// A bandwidth-bound kernel of `bytes` traffic (copies, casts, the optimizer).
[[nodiscard]] Work memory_work(double bytes, int launches);

// The GPU's optimizer step over the parameters each wrapped unit has on this rank (`unit_params`),
// whose state is `storage_bytes` a number (fsdp/model_state.hpp, foreach or fused by
// training.optimizer_impl), plus `extra_bytes` of traffic the framework adds to it: its work,
// with launches per unit, and foreach Adam's temporaries on `op`, one per unit (torch allocates
// one per parameter tensor), allocated at its start and freed at its end.
void add_optimizer_step(Op& op, const config::ScenarioConfig& s, const std::vector<double>& unit_params, int storage_bytes,
                        double extra_bytes = 0);

}  // namespace shardsim::graph
