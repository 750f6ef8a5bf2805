// The model as a tree of modules with named parameters, in the shape PyTorch would build it, so
// that wrap policies, flat-parameter padding and FSDP2's per-parameter sharding see exactly the
// parameters PyTorch would. Each module also says what compute it does itself (kernels) and what
// activation memory it keeps for backward.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace shardsim::model {

struct Param {
  std::string name;                 // local name: "weight", "bias", "in_proj_weight"
  std::vector<std::int64_t> shape;  // dim 0 is the one FSDP2 shards
  bool float8_all_gather = false;   // FSDP2 all-gathers it in float8 (torchao; model/float8.hpp)

  [[nodiscard]] std::int64_t numel() const;
};

enum class KernelKind { matmul, attention, memory, tp_comm };

// torchao's float8 training recipes (Float8LinearConfig.from_recipe_name, and MXFP8): how a
// converted nn.Linear's three GEMMs run and what casts they need (model/float8.hpp).
enum class Float8Recipe : std::uint8_t { none, tensorwise, rowwise, rowwise_with_gw_hp, mxfp8 };

// A tensor-parallel collective of activations at a point of the forward program, and its mirror
// in backward (Megatron's f and g operators; with sequence parallelism all-gather and
// reduce-scatter instead of all-reduce).
enum class TpComm : std::uint8_t { none, all_gather, reduce_scatter, all_reduce };

// How the model is split over a tensor-parallel group: Megatron-style column- and row-parallel
// linears (torchtitan's ColwiseParallel / RowwiseParallel), with or without sequence parallelism
// for the norms and residual stream between them.
struct TensorParallel {
  int degree = 1;
  bool sequence_parallel = true;
  bool loss_parallel = true;       // logits left sharded over the vocabulary for the loss; false: all-gathered
  bool shard_embedding = true;     // token embedding split over the vocabulary; false: whole on every rank
  bool save_gathered = true;       // sp: column-parallel linears keep their gathered input; false: their shard
  bool gather_per_linear = false;  // each column-parallel linear gathers its input (its gradient reduced) itself
  bool sequence_leading = false;   // activations [s, b, h] (Megatron); false: [b, s, h], sp reorders by a copy
  bool shard_output = true;        // output layer split over the vocabulary; false: whole on every rank
  [[nodiscard]] bool sp() const { return degree > 1 && sequence_parallel; }
  // Sequence parallelism without checkpointing: the elements a token keeps of the two
  // column-parallel linears' inputs (the norms' outputs, h each), whole or as sequence shards
  // (Megatron's tp_save_gathered_input: false); and what a re-gather holds whole again while its
  // linear's backward runs.
  [[nodiscard]] double kept_column_inputs(double h) const { return save_gathered ? 2 * h : 2 * h / degree; }
  [[nodiscard]] double regathered_input(double h) const { return save_gathered ? 0 : h; }
};

// How each rank holds and runs a block: its tensor-parallel share, and whether torch.compile
// fuses its memory-bound kernels (blocks.cpp says which fuse); and how the training loop
// computes the loss after the blocks.
struct BlockOptions {
  TensorParallel tp;
  bool compiled = false;
  int cp = 1;                      // context parallelism: a rank holds 1/cp of each sequence, K and V all-gathered per attention
  bool loss_upcast = true;         // cross-entropy on fp32 logits (torchtitan); false: in the activations' dtype
  bool keep_logits = false;        // the training loop holds the logits through backward (no `del pred`)
  bool keep_logits_fp32 = false;   // the logits it holds are fp32 (the model's forward upcasts them)
  bool compile_loss = false;       // the loss function under torch.compile (transformer.cpp)
  bool megatron_loss = false;      // Megatron-LM's vocab-parallel cross-entropy (transformer.cpp)
  bool unfused_attention = false;  // training.attention: unfused (model/attention_impl.hpp)
  double dropout = 0;              // training.dropout (GPT blocks: the residual branches)
  double attention_dropout = 0;    // training.attention_dropout (GPT blocks, unfused attention: the probabilities)
};

// One piece of compute done by a module itself (not by its children), per micro-batch of
// `tokens` tokens. Matmuls are y[tokens, n] = x[tokens, k] W^T; attention is a fused
// (FlashAttention-style) kernel; memory kernels are bandwidth-bound elementwise work.
struct Kernel {
  std::string name;
  KernelKind kind = KernelKind::memory;
  std::int64_t n = 0;  // matmul output features
  std::int64_t k = 0;  // matmul input features
  // The weight's features as the model defines them, before tensor parallelism sharded one of
  // them (0: n, k). torchtitan converts linears to float8 before parallelizing the model, so its
  // auto filter judges these.
  std::int64_t model_n = 0;
  std::int64_t model_k = 0;
  int heads = 0;  // attention: query heads, kv heads (after any repeat), head dim
  int kv_heads = 0;
  int head_dim = 0;
  bool causal = true;
  std::int64_t window = 0;            // attention: sliding window (keys a query sees, itself included); 0: none
  double bytes_per_token = 0;         // memory kernels: HBM traffic of the forward, per token;
                                      // tp_comm: the whole (unsharded) activation, per token
  TpComm tp_forward = TpComm::none;   // tp_comm: the collective in forward
  TpComm tp_backward = TpComm::none;  // tp_comm: the collective in backward
  // tp_comm: how many times its forward and backward collectives run, more than once entering a
  // module whose column-parallel linears each gather the input themselves
  // (TensorParallel::gather_per_linear; kernels.hpp tp_enter).
  int tp_forward_copies = 1;
  int tp_backward_copies = 1;
  // tp_comm: whether a copy kernel on the compute stream reorders the forward / backward
  // collective's tensor, after an all-gather and before a reduce-scatter: PyTorch's functional
  // collectives gather and scatter along dimension 0 (chunk + cat when the split dimension is
  // another), DTensor's sequence shards of [b, s, h] activations being on dimension 1.
  bool tp_forward_reorders = false;
  bool tp_backward_reorders = false;
  double backward_bytes_factor = 2.0;  // memory kernels: backward traffic / forward traffic
  int launches = 1;                    // kernels launched in the forward (eager PyTorch)
  // matmul of a Float8Linear (training.float8): its recipe, whether torch.compile fuses the
  // input and grad_output casts into the kernels before them, and whether its weight arrives in
  // float8 from FSDP2's all-gather (then cast before the all-gather, on the shard).
  Float8Recipe float8 = Float8Recipe::none;
  bool float8_fused_casts = false;
  bool float8_weight_gathered = false;
  // Under tensor parallelism with tensorwise scales (torchao's PrepareFloat8ModuleInput) a
  // column-parallel linear's input arrives in float8, cast once for all the module's linears that
  // read it, on the rank's sequence shard before the all-gather: the share of that one cast (of
  // the whole input, tokens x k) charged to this linear (the first reader: 1 / tp with sequence
  // parallelism, 1 without; the others 0). Below 0: the linear casts its own input.
  double float8_prepared_input = -1;
  // Likewise a row-parallel linear's grad_output under sequence parallelism: torchao's
  // Float8RowwiseParallel casts it on the rank's sequence shard before the gradient's all-gather
  // (NoopFwToFloat8BwDynamic after the output's redistribute): the share of the gathered gradient
  // that cast reads (1 / tp). Below 0: the linear casts the gradient itself.
  double float8_prepared_grad = -1;
  // Under torch.compile the converted linears that read the same tensor (wq, wk, wv; w1, w3)
  // share one cast of it: AOTAutograd eliminates common subexpressions in the joint graph before
  // partitioning it (torch/_functorch/partitioners.py, functorch config `cse`, on by default),
  // which merges their identical amax, cast and transpose ops. The share of the input's casts
  // (its forward cast, and the copy of it the weight gradient reads) charged to this linear: 1
  // for the first reader, 0 for the others.
  double float8_input_share = 1;
  // tp_comm: the share of `bytes_per_token` its all-gathers move: 1 / activation bytes where
  // they gather float8 (torchao's Float8ColwiseParallel / Float8RowwiseParallel, tensorwise).
  double all_gather_share = 1.0;
  // Per-op selective activation checkpointing (torchtitan's "op" SAC) recomputes this kernel in
  // backward: every memory kernel and every second matmul of a block.
  bool recomputed_by_selective = false;
  // tp_comm: a context-parallel collective (over the cp group) rather than a tensor-parallel one.
  bool context_parallel = false;
  // attention: the scores materialized (training.attention: unfused) in `score_bytes` per
  // element, with dropout of this probability on them (model/attention_impl.hpp).
  bool unfused = false;
  double dropout = 0;
  int score_bytes = 2;
};

enum class AcMode { none = 0, selective = 1, full = 2 };

// Activation memory a module keeps between its forward and its backward, per token, for each
// activation-checkpointing mode, and the extra memory its backward needs while it runs.
struct Activation {
  std::array<double, 3> saved{};               // bytes per token kept from forward to backward
  std::array<double, 3> backward_transient{};  // bytes per token alive only during its backward
  // Bytes per token of this module's output that the training loop holds from its forward until
  // the next micro-step's forward has returned (`logits = model(x)` rebinding the name), and so
  // through the optimizer step into the next step: one copy always, two while a forward ends.
  double held_by_loop = 0;
  // Bytes per token alive only while its forward runs (torchtitan's loss: the fp32 copy of the
  // logits that log-softmax reads), allocated before what it saves and freed when it ends.
  double forward_transient = 0;
  // Bytes per token of its input, the module before's product, that the training loop frees as
  // soon as this module's forward ends (torchtitan's `del pred` after the loss; Megatron's logits
  // going out of scope): allocated at this forward's start, before its transient and what it
  // saves, so that freeing them leaves a hole below the saved tensor, as the caching allocator does.
  double input_freed_after = 0;
  // Bytes per token of the largest single tensor its backward allocates (a block's MLP-wide
  // activations, the loss's gradients): the backward transient is allocated as equal tensors no
  // larger than that, one after another, as PyTorch allocates each (best fit may place them
  // apart, or in cached blocks a whole transient would not fit); 0: one block.
  double largest_tensor = 0;
};

// One step of a module's forward: call a child, or run one of its own kernels.
struct ProgramItem {
  int child = -1;  // index into children, or -1 for a kernel
  Kernel kernel;
};

struct Module {
  std::string name;  // local name: "layers", "0", "attention", "wq"
  std::string type;  // class name: "Transformer", "TransformerBlock", "Attention", "Linear", ...
  std::vector<Param> params;
  std::vector<Module> children;
  std::vector<ProgramItem> program;  // forward order; children not listed here are not called
  Activation activation;
  bool is_block = false;      // a transformer block (the unit of activation checkpointing)
  bool is_embedding = false;  // token / position embedding (excluded from MFU's N)
  bool tied_weight = false;   // computes with another module's weight (an output head tied to the embedding)

  [[nodiscard]] std::int64_t own_numel() const;
  [[nodiscard]] std::int64_t numel() const;  // whole subtree
};

}  // namespace shardsim::model
