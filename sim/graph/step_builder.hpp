// Internal to the graph layer: builds the step graph of PyTorch FSDP (version 1 or 2) by walking
// the plan's forward trace in CPU issue order, once forward and once reversed for backward, per
// micro-step and step. See builder.hpp for the contract and fsdp-semantics.md for the rules.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "fsdp/plan.hpp"
#include "graph/issuer.hpp"
#include "graph/step_graph.hpp"
#include "graph/work.hpp"

namespace shardsim::graph {

enum class Phase { forward, backward };

// Whether the compute op after a tensor-parallel collective waits for it (FsdpStepBuilder::tp_op).
enum class TpWait { next_compute, overlapped };

class FsdpStepBuilder {
 public:
  // Issues its ops into `graph`. With pipeline parallelism `plan` is one model chunk's, `stage`
  // the pipeline stage (rank) that runs it (its ops carry it), `micro_batch` the sequences of one
  // pipeline micro-batch, and `shared` the issuer of that stage's ranks when they run several
  // chunks (interleaved schedules: one CPU thread and one set of streams for all of them).
  FsdpStepBuilder(const fsdp::Plan& plan, const config::ScenarioConfig& scenario, int steps, StepGraph& graph, int stage = -1,
                  std::int64_t micro_batch = 0, Issuer* shared = nullptr);
  // simulation.max_wall_time, checked as ops are issued; must outlive build().
  void set_deadline(const Deadline& deadline) { io_.set_deadline(deadline); }
  // The whole graph of `steps` steps, micro-step after micro-step (no pipeline).
  void build();

  // ---- one pipeline stage's program, driven by the schedule (pipeline_builder.cpp) ----
  // Micro-batch `micro` forward after `input` (the send of the previous stage, -1 for the first):
  // returns the last forward compute op, which the send to the next stage follows.
  int pipeline_forward(int step, int micro, int input);
  // Its backward after `grad_input` (the next stage's send, -1 for the last stage): returns the
  // op whose end makes the gradient for the previous stage.
  int pipeline_backward(int step, int micro, int grad_input);
  // Zero-bubble schedules split it: the input gradients after `grad_input` (returns the op whose
  // end makes the gradient for the previous stage), then later the weight gradients (and, on the
  // last micro-batch, the post-backward reshard and gradient reduction).
  int pipeline_backward_input(int step, int micro, int grad_input);
  void pipeline_backward_weight(int step, int micro);
  // FSDP2 under torch.distributed.pipelining: the stage's post-backward of every unit (reshard and
  // gradient reduction), which the schedule runs once, after the stage's last backward (its
  // REDUCE_GRAD action) rather than as each unit's backward ends. Nothing otherwise.
  void pipeline_reduce_grad(int step);
  // The last stage's output of a micro-batch (`bytes` of logits), which torch's schedule keeps
  // from its forward to the step's end (pipelining's output_chunks, cleared when the next step
  // starts); Megatron-LM's keeps nothing.
  void retain_stage_output(double bytes);
  // step()'s merge of the kept outputs (the last stage), before the optimizer step.
  void merge_stage_outputs(int wait);
  // The optimizer step after the stage's last micro-batch, and after `wait` if given.
  void pipeline_optimizer(int step, int wait = -1);
  // Whether the stage runs under torch.distributed.pipelining, as torchtitan runs FSDP2 stages (its
  // REDUCE_GRAD, retained outputs and receive buffers), rather than Megatron-LM's schedule (DDP
  // and the distributed optimizer).
  [[nodiscard]] bool torch_pipelining() const { return stage_ >= 0 && v2_ && plan_.traits.shards_params; }
  // The stage's input arrives in a receive buffer the schedule holds anyway (`bytes` a
  // micro-batch): the first block's saved input is that buffer, not an allocation of its own.
  void set_received_input(double bytes);
  // The info of this builder's plan (groups, initial memory); a pipeline's per stage.
  void fill_info();
  Issuer& issuer() { return io_; }

 private:
  // ---- making parameters available (step_builder.cpp) ----
  int issue(Op op) {
    op.stage = stage_;
    return io_.issue(std::move(op));
  }
  static Op make(OpKind kind, Stream stream, std::string name, int unit) { return make_op(kind, stream, std::move(name), unit); }
  // A copy step over a group: every member sends `bytes` to the one `shift` places after it
  // (async TP's chunk copies, the CP ring's K/V and gradient passes).
  static Op shift_send(Group group, int shift, double bytes, Stream stream, std::string name, int unit) {
    Op op = make(OpKind::send, stream, std::move(name), unit);
    op.group = group;
    op.shift = shift;
    op.bytes = bytes;
    return op;
  }
  void rate_limit();
  void unshard(int u, Phase phase, int prefetch_trigger);
  void wait_unshard(int u, Phase phase);
  void reshard(int u, Phase phase);
  int compute(Op op, int u);
  void prefetch(const std::vector<int>& targets, Phase phase, int trigger);
  void tp_collective(const fsdp::Segment& s, int u, Phase phase);
  // One of tp_collective's collectives (TP or CP), chained after the one pending; `wait`: whether
  // the next compute op waits for it (tp_wait_), or it overlaps compute and only the ops given an
  // edge to it wait.
  int tp_op(const fsdp::Segment& s, model::TpComm c, std::string_view note, int u, TpWait wait = TpWait::next_compute);
  static void add_reorder(Op& op, double bytes);
  void reorder_before(double bytes);
  void reorder_after(double bytes, TpWait wait);
  void check_no_pending_reorder() const;

  // ---- async tensor parallelism (async_tp.cpp) ----
  void find_fused_regions();
  [[nodiscard]] bool fused_away(int segment) const;  // a TP collective its neighbour's matmuls run
  void forward_fused(const fsdp::Segment& s, int segment, int u);
  void backward_fused(const fsdp::Segment& s, int segment, int u);
  [[nodiscard]] double tp_bytes(const fsdp::Segment& tp, OpKind kind) const;  // what its collective of `kind` moves
  std::vector<int> gather_copies(const fsdp::Segment& tp, std::string_view note, int u);
  void gathered_chunks(OpKind kind, const std::string& name, const std::vector<Gemm>& gemms, const std::vector<int>& copies, int u);
  void strided_gather_copy(const fsdp::Segment& tp, bool reorders);
  void scattered_chunks(OpKind kind, const std::string& name, const std::vector<Gemm>& gemms, const fsdp::Segment& tp,
                        std::string_view note, int u);
  void backward_memory(Op& op, const fsdp::Segment& s, int u, model::AcMode mode, BackwardPart part);
  void plain_forward(const fsdp::Segment& s, int u);
  void plain_backward(const fsdp::Segment& s, int u);
  void save_activations(Op& op, const fsdp::Segment& s) const;
  [[nodiscard]] double saved_bytes(const fsdp::Segment& s, model::AcMode mode) const;  // what its forward keeps
  void reduce_replicated(const fsdp::Segment& s, int id);

  // ---- context parallelism's ring attention (ring_attention.cpp) ----
  void forward_ring(const fsdp::Segment& s, int segment, int u);
  void backward_ring(const fsdp::Segment& s, int segment, int u);
  std::vector<int> ring_kv(const fsdp::Segment& cp, std::string_view note, int u);
  struct RingBuffers {
    double kv = 0;        // the rank's K and V, bytes
    double q = 0;         // its queries (and its attention output), bytes
    double rotation = 0;  // what passing K and V around holds: the gathered buffer or the sends'
  };
  [[nodiscard]] RingBuffers ring_buffers(const fsdp::Segment& cp) const;
  void ring_forward(const model::Kernel& attention, const fsdp::Segment& cp, OpKind kind, const std::string& name, int u);
  void ring_backward(const model::Kernel& attention, const fsdp::Segment& cp, const std::string& name, int u);

  // ---- passes (fsdp_passes.cpp; reduction and optimizer: fsdp_reduction.cpp) ----
  void forward();
  void backward();
  void forward_compute(const fsdp::Segment& s, int segment, int u);
  void backward_compute(const fsdp::Segment& s, int segment, int u);
  void reduce(int u);
  void reduce_scatter(int u);                                           // the synchronizing micro-step's reduction of unit u's gradients
  void flatten_grads(int u);                                            // FSDP1: the parameters' gradients into the flat parameter's
  [[nodiscard]] Work reduction_kernels(int u, bool first_micro) const;  // casts and divisions around the reduce-scatter
  int post_backward_kernels(int u, bool first_micro);                   // FSDP1: those as one op after backward
  void upcast_accumulation(int u);    // FSDP2: this micro-step's gradients into the reduce-dtype accumulator
  void accumulate_kept_grads(int u);  // DDP, ZeRO-1, FSDP2: this micro-step's gradients added to the kept ones
  void bucket_reduce(double numel, int producer, bool flush);
  void gather_updated(int u);  // shard_optimizer: the updated parameters, before their first forward
  void optimizer();
  void create_optimizer_state(Op& op) const;  // the first step's lazily created moments
  int stage_output();
  [[nodiscard]] double hook_cpu_s(int u, bool gather) const;  // FSDP's hooks on the CPU (host.fsdp*_hook_*)
  void amax_all_reduces(int u);                               // training.float8 all-gather without precomputed scales
  void precompute_float8_scales();                            // ... with them, after the optimizer step
  void grad_norm_all_reduces();                               // gradient-norm clipping, before the optimizer step
  void after_reductions(int id);                              // op `id` waits for every gradient reduction (the final callback)
  [[nodiscard]] double distributed_optimizer_bytes() const;   // per parameter of a rank's 1/dp
  [[nodiscard]] std::vector<fsdp::TraceEvent> forward_events() const;
  [[nodiscard]] std::vector<fsdp::TraceEvent> backward_events() const;
  [[nodiscard]] std::vector<int> forward_prefetch_targets(const std::vector<fsdp::TraceEvent>& events, std::size_t from) const;
  [[nodiscard]] std::vector<int> backward_prefetch_targets(int u) const;

  // ---- sizes and state ----
  [[nodiscard]] const fsdp::Unit& unit(int u) const { return plan_.units[static_cast<std::size_t>(u)]; }
  [[nodiscard]] bool has_params(int u) const { return unit(u).padded_numel > 0; }
  // no_shard with mixed precision (PyTorch DDP): parameters kept in the master dtype, cast for
  // compute per unit.
  [[nodiscard]] bool casts_params() const {
    return !plan_.traits.shards_params && !megatron_buffers() && plan_.param_bytes != plan_.master_bytes;
  }
  // shard_optimizer (ZeRO-1): parameters whole, optimizer state sharded.
  [[nodiscard]] bool shards_optimizer_only() const { return !plan_.traits.shards_params && plan_.traits.shards_optimizer; }
  // Megatron-LM's data parallelism (its distributed optimizer, shard_optimizer, or its DDP,
  // no_shard with fsdp.ddp_impl: megatron): the model's parameters in the compute dtype, fp32
  // main parameters beside the optimizer's state (of the rank's 1/dp), and a contiguous main-
  // gradient buffer in the reduce dtype that every micro-step's gradients are added into.
  [[nodiscard]] bool megatron_buffers() const { return fsdp_.megatron_grad_buffer(); }
  // torch.optim's state, on the GPU, created at the first step. CPU offload's is host memory;
  // Megatron's optimizers hold theirs with the fp32 main parameters from the start, as one figure
  // (distributed_optimizer_bytes), though FusedAdam too makes its moments at the first step.
  [[nodiscard]] bool lazy_optimizer_state() const { return !offload_ && !megatron_buffers(); }
  [[nodiscard]] double unsharded_bytes(int u) const;
  [[nodiscard]] double grad_bytes(int u) const;
  [[nodiscard]] double reduce_buffer_bytes(int u) const;
  [[nodiscard]] double shard_master_bytes(int u) const;
  [[nodiscard]] Stream ag_stream() const { return v2_ ? Stream::all_gather : Stream::nccl; }
  [[nodiscard]] Stream rs_stream() const { return v2_ ? Stream::reduce_scatter : Stream::nccl; }
  [[nodiscard]] bool syncing() const;  // reduce gradients in this micro-step (no_sync)
  // FSDP2 in a pipeline stage: torch's schedule, not autograd, runs the reducing post-backward.
  [[nodiscard]] bool schedule_reduces() const { return torch_pipelining(); }
  // FSDP1 reduces a copy of the flat gradient cast to the reduce dtype where that differs.
  [[nodiscard]] bool casts_grads_to_reduce() const { return !v2_ && plan_.reduce_bytes != plan_.grad_bytes; }
  // Gradients accumulate over micro-steps in the reduce dtype, wider than the parameters'.
  [[nodiscard]] bool upcasts_accumulated_grads() const { return accumulate_ && micro_steps_ > 1 && plan_.reduce_bytes > plan_.grad_bytes; }
  template <class T>
  [[nodiscard]] static T& at(std::vector<T>& v, int u) {
    return v[static_cast<std::size_t>(u)];
  }

  const fsdp::Plan& plan_;
  const config::ScenarioConfig& cfg_;
  const config::FsdpConfig& fsdp_;
  bool v2_;
  bool offload_;
  int steps_;
  int stage_;        // pipeline stage, -1 without pipeline parallelism
  int micro_steps_;  // gradient accumulation's micro-steps, or the pipeline's micro-batches
  bool accumulate_;  // unsharded gradients kept until the last micro-step (no_sync, or pipelining)
  Batch batch_;
  StepGraph& g_;
  Issuer own_{g_};
  Issuer& io_;
  int step_ = 0;
  int micro_ = 0;
  int last_compute_op_ = -1;               // the latest op issued by compute()
  BackwardPart part_ = BackwardPart::all;  // what backward() issues (zero-bubble schedules split it)

  int last_copy_out_ = -1;         // FSDP2: all-gathers wait for the previous copy-out
  int last_reduce_ = -1;           // FSDP2: copy-in waits for the previous reduce-scatter
  int deferred_buffer_free_ = -1;  // FSDP2 forward: all-gather buffer freed at the next copy-out
  int last_d2h_ = -1;
  int last_optimizer_ = -1;
  int tp_wait_ = -1;                              // the tensor-parallel collective the next compute op waits for
  double received_input_ = 0;                     // pipeline: the stage input's bytes a receive buffer holds
  const fsdp::Segment* received_into_ = nullptr;  // the segment whose saved input that buffer is
  double pending_reorder_ = 0;                    // bytes of an all-gather's layout copy the next compute op runs first
  double bucket_numel_ = 0;                       // no_shard: gradients waiting in the current DDP bucket
  std::deque<int> limiter_;                       // FSDP1: reshard events, oldest first
  std::vector<int> available_;                    // op after which unit u's parameters are usable, -1 if not
  std::vector<int> gather_of_;                    // the latest all-gather of unit u
  std::vector<int> pending_gather_;               // FSDP2: all-gather awaiting its copy-out, -1 if none
  std::vector<char> prefetched_;
  std::vector<char> partially_sharded_;  // holding a 1/d copy after forward (reshard_to)
  std::vector<int> last_compute_;
  std::vector<char> grads_pending_;  // FSDP1: the flat gradient not allocated yet this micro-step
  std::vector<char> grads_alive_;    // unsharded gradients kept across micro-steps (no_sync)
  std::vector<char> backward_done_;
  std::vector<int> post_forward_order_;
  std::vector<std::size_t> post_forward_position_;  // per unit: its first place in post_forward_order_ (its size if none)
  std::vector<Pool> unsharded_pool_;                // where unit u's usable parameters were allocated
  std::vector<std::vector<double>> grad_pieces_;    // FSDP2: per-parameter gradients of unit u alive
  std::vector<MemEffect> grad_shard_frees_;         // what zero_grad frees after the optimizer step
  std::vector<int> schedule_reductions_;            // units whose post-backward waits for the schedule's REDUCE_GRAD
  std::vector<double> retained_outputs_;            // the last stage's logits the schedule holds this step
  // Async TP, per segment of the plan: the TP all-gather segment whose output its leading matmuls
  // read, fused with them (-1: none); the TP reduce-scatter segment its trailing matmul feeds,
  // fused with it (-1: none).
  std::vector<int> fused_gather_;
  std::vector<int> fused_scatter_;
  std::vector<char> fused_tp_;  // per segment: a TP or CP collective its neighbour runs fused
  // Context parallelism, per segment: the CP K/V gather before it whose attention (its first
  // kernel) runs as ring attention, step by step (-1: none).
  std::vector<int> ring_of_;
};

}  // namespace shardsim::graph
