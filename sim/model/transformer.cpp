#include "model/transformer.hpp"

#include <stdexcept>

#include "model/attention_impl.hpp"
#include "model/blocks.hpp"
#include "model/kernels.hpp"

namespace shardsim::model {
namespace {

// Rows of the vocabulary one tensor-parallel rank holds (DTensor shards unevenly: ceil(V / t)).
std::int64_t vocab_share(const TransformerSpec& s, const TensorParallel& tp) {
  return (s.vocab + tp.degree - 1) / tp.degree;
}

// The loss as torchtitan computes it: cross_entropy(logits.float(), labels). Forward traffic per
// token: upcast (a+4)V, log-softmax (three fp32 passes, 12V), nll (~4V) = about 22V with a = 2;
// backward about 18V. Autograd keeps the fp32 log-softmax output (4V); its backward holds the
// incoming and outgoing fp32 gradients (8V) on top (d1-hand-model.md: 3 x 7.83 GiB at the peak).
// Without the upcast (training.loss_upcast: false, F.cross_entropy on bf16 logits) the same
// passes run over elements of the logits' a bytes: no cast, 3aV + aV forward, 18V x a/4
// backward, aV kept and 2aV at its backward.
//
// Compiled (training.compile_loss: torchtitan's build_cross_entropy_loss wraps the same function
// in torch.compile with training.compile since bbb1b616, 2025-04): Inductor turns the cast and
// the log-softmax into reductions over each row of logits that upcast in registers, so nothing
// of V elements is written forward: one kernel reading the aV logits twice (the row's max, then
// its sum of exponentials; the label's logit gathered). Backward reads the logits again and
// writes their bf16 gradient (softmax minus one-hot, 2aV; counted as two launches, as every
// memory-bound backward here). What it keeps for backward is its input, the aV logits (plus a
// per-row logsumexp, 4 bytes a token), and its backward holds the aV gradient it writes: 2aV at
// the peak against eager's 12V (fp32 upcast).
//
// Tensor parallel (torchtitan's loss_parallel): each rank holds 1/t of the vocabulary's logits,
// and the softmax's max and sum over the vocabulary are all-reduced (two fp32 per token).
//
// Megatron-LM's (training.loss_impl: megatron; megatron/core/tensor_parallel/cross_entropy.py,
// _VocabParallelCrossEntropy, and the 2021 mpu/cross_entropy.py it grew from) runs each step as
// its own eager pass over the logits' shard, in place where it can. Forward, per token, e the
// bytes of the elements it works on (4 upcast, else the logits' a): the cast (a + 4)V when
// upcast, the max eV, the in-place subtraction of it 2eV, exp in place 2eV, their sum eV and the
// in-place division by it 2eV: 8eV (38V upcast against torch's 22V). It keeps that softmax (eV)
// and its backward makes the gradient of it in place (grad_input.mul_: 2eV), cast back to the
// logits' dtype when upcast ((e + a)V, that copy held): 14V upcast against 18V. Under tensor
// parallelism the max, the target's logit and the sum are all-reduced, three fp32 a token.
// Launches: the five passes, the cast and about a dozen small per-token ops (the target mask,
// its index, the gathered logit, the log) forward, about eight backward; counted as 9 forward and
// 18 backward, as every memory-bound kernel here.
//
// Where the loop lets go of the logits once the loss is made (`frees_logits`: torchtitan's `del
// pred` before backward; Megatron's model returns the loss, its logits going out of scope), the
// logits (aV) lie below the loss's tensors and their block is freed under them: torchtitan's
// eager loss allocates the logits, their fp32 copy (4V, log-softmax's input, dropped when
// cross_entropy returns) and the log-probabilities (4V, kept) in turn, so 6V come free below the
// kept 4V; the backward's first gradient (4V) fits there by best fit and its second is placed
// above, leaving 2V of that hole unused at the loss's peak (Activation::input_freed_after,
// forward_transient and largest_tensor). Megatron's softmax is its fp32 copy, made in
// place, and the bf16 gradient it casts back fits the logits' hole exactly.
Module megatron_loss_module(const TransformerSpec& s, int act, const TensorParallel& tp, bool upcast, bool frees_logits) {
  const auto v = static_cast<double>(loss_vocab(s, tp));
  const double a = act;
  const double e = upcast ? 4.0 : a;
  Module m;
  m.name = "loss";
  m.type = "CrossEntropyLoss";  // what the plan knows the loss by (fsdp/plan.cpp)
  if (tp.degree > 1) add_kernel(m, tp_comm_kernel("vocab_parallel_reductions", TpComm::all_reduce, TpComm::none, 12.0));
  const double fwd = (upcast ? a + 4 : 0.0) * v + 8 * e * v;
  const double bwd = 2 * e * v + (upcast ? (e + a) * v : 0.0);
  add_kernel(m, memory_kernel("cross_entropy", fwd, 9, bwd / fwd));
  m.activation.saved = {e * v, e * v, e * v};
  const double held = upcast ? a * v : 0.0;
  m.activation.backward_transient = {held, held, held};
  // Without the upcast its in-place passes run on the logits themselves, which it keeps.
  if (upcast && frees_logits) m.activation.input_freed_after = a * v;
  return m;
}

Module loss_module(const TransformerSpec& s, int act, const TensorParallel& tp, bool upcast, bool compiled, bool frees_logits,
                   bool fp32_logits) {
  const auto v = static_cast<double>(loss_vocab(s, tp));
  Module m;
  m.name = "loss";
  m.type = "CrossEntropyLoss";
  if (tp.degree > 1 && tp.loss_parallel) add_kernel(m, tp_comm_kernel("loss_parallel", TpComm::all_reduce, TpComm::none, 8.0));
  if (compiled) {
    const double a = act;
    add_kernel(m, memory_kernel("cross_entropy", 2 * a * v, 1, 1.0));
    m.activation.saved = {a * v + 4, a * v + 4, a * v + 4};
    m.activation.backward_transient = {a * v, a * v, a * v};
    return m;
  }
  const double e = upcast ? 4.0 : static_cast<double>(act);  // bytes of the elements the loss works on
  const double fwd = (upcast ? act + 4.0 : 0.0) * v + 3 * e * v + e * v;
  add_kernel(m, memory_kernel("cross_entropy", fwd, upcast ? 4 : 3, 4.5 * e * v / fwd));
  m.activation.saved = {e * v, e * v, e * v};
  // aten's nll_loss and log_softmax backward kernels hold two V-wide tensors beside the kept
  // log-probabilities (the one-hot gradient and the result). Under loss_parallel DTensor runs its
  // own backward (torch/distributed/tensor/parallel/loss.py, _nll_loss_and_log_softmax_backward):
  // (zeros_like(x) + exp(x)) * grad_output, separate tensors, three at its peak.
  const int gradients = tp.degree > 1 && tp.loss_parallel ? 3 : 2;
  const double held = gradients * e * v;
  m.activation.backward_transient = {held, held, held};
  m.activation.largest_tensor = e * v;  // each of its gradients
  // logits.float(), freed when cross_entropy returns; none where the model returned them fp32.
  if (upcast && !fp32_logits) m.activation.forward_transient = e * v;
  if (frees_logits) m.activation.input_freed_after = static_cast<double>(act) * v;
  return m;
}

// Root-level modules keep their input for backward whatever the checkpointing mode.
void keep_input(Module& m, double bytes_per_token, double backward_transient = 0) {
  m.activation.saved = {bytes_per_token, bytes_per_token, bytes_per_token};
  m.activation.backward_transient = {backward_transient, backward_transient, backward_transient};
}

// Tensor parallel: ColwiseParallel over the vocabulary, its input all-gathered from sequence
// shards (or its input gradient all-reduced), the logits left sharded for loss_parallel, or
// all-gathered over the vocabulary without it (output_layouts=Replicate; its backward keeps the
// rank's slice of the gradient, no collective).
// A training loop that keeps a reference to the logits (`logits = model(x)` then `loss.backward()`
// without torchtitan's `del pred`) holds them until the name is bound again, when the next
// micro-step's forward returns: through the backward and the optimizer step, two copies while a
// forward ends (Activation::held_by_loop), in fp32 where the model returns them upcast
// (`kept_bytes` 4).
Module output_layer(const TransformerSpec& s, std::string name, int act, const TensorParallel& tp, int kept_bytes) {
  const double ah = static_cast<double>(act) * static_cast<double>(s.hidden);
  // Left out of the TP plan (tp_shard_output: false; KempnerForge's pipeline stages), the whole
  // layer runs on every rank, on the whole hidden states (no sequence parallelism), to all the
  // logits; its input gradient is whole on every rank alike, so no collective either way.
  const bool split = tp.degree > 1 && tp.shard_output;
  Module out = sharded_linear(std::move(name), s.hidden, split ? vocab_share(s, tp) : s.vocab, s.head_bias, s.hidden, s.vocab);
  if (s.tie_embeddings) {
    out.params.clear();  // the weight is the embedding's, counted once
    out.tied_weight = true;
  }
  if (split) {
    std::vector<ProgramItem> program;
    program.reserve(out.program.size() + 1);
    program.push_back(ProgramItem{-1, tp_enter("tp_enter", tp, ah)});
    for (auto& item : out.program) program.push_back(std::move(item));
    out.program = std::move(program);
  }
  const double logits = static_cast<double>(act) * static_cast<double>(loss_vocab(s, tp));
  if (split && !tp.loss_parallel) {
    Kernel gather = tp_comm_kernel("logits_all_gather", TpComm::all_gather, TpComm::none, logits);
    gather.tp_forward_reorders = true;  // gathered on the vocabulary, the last dimension
    add_kernel(out, std::move(gather));
  }
  // Keeps its input; its backward holds the bf16 gradient of the logits.
  keep_input(out, ah, logits);
  out.activation.held_by_loop = static_cast<double>(kept_bytes) * static_cast<double>(loss_vocab(s, tp));
  // A model that returns its logits upcast (`self.output(h).float()`) makes them in its own dtype
  // first and drops that copy once the fp32 one is made, below it.
  if (kept_bytes == 4 && act < 4) out.activation.forward_transient = logits;
  return out;
}

Module final_norm(const TransformerSpec& s, std::string name, int act, const TensorParallel& tp) {
  Module n = s.arch == Arch::llama ? rms_norm(std::move(name), s.hidden, act) : layer_norm(std::move(name), s.hidden, act);
  const double seq_share = tp.sp() ? 1.0 / tp.degree : 1.0;
  scale_memory_kernels(n, seq_share);
  keep_input(n, static_cast<double>(act) * static_cast<double>(s.hidden) * seq_share);
  return n;
}

// Tensor parallel: RowwiseParallel over the vocabulary; the partial embeddings are
// reduce-scattered to sequence shards (or all-reduced). Not sharded (tp_shard_embedding: false)
// every rank looks up whole rows; with sequence parallelism the first norm takes its sequence
// shard of them, and in backward the shards' gradients are all-gathered back.
Module token_embedding(const TransformerSpec& s, std::string name, int act, const TensorParallel& tp) {
  const double ah = static_cast<double>(act) * static_cast<double>(s.hidden);
  if (tp.degree > 1 && !tp.shard_embedding) {
    Module e = embedding(std::move(name), s.vocab, s.hidden, act);
    if (tp.sp()) {
      Kernel gather = tp_comm_kernel("tp_leave", TpComm::none, TpComm::all_gather, ah);
      gather.tp_backward_reorders = reorders(tp);
      add_kernel(e, std::move(gather));
    }
    return e;
  }
  Module e = embedding(std::move(name), vocab_share(s, tp), s.hidden, act);
  if (tp.degree > 1) add_kernel(e, tp_leave("tp_leave", tp, ah));
  return e;
}

}  // namespace

std::int64_t loss_vocab(const TransformerSpec& s, const TensorParallel& tp) {
  return tp.degree > 1 && tp.loss_parallel && tp.shard_output ? vocab_share(s, tp) : s.vocab;
}

namespace {

Module build_root(const TransformerSpec& spec, int act_bytes, const BlockOptions& options) {
  const TensorParallel& tp = options.tp;
  Module root;
  root.type = "Transformer";
  const bool gpt = spec.arch == Arch::gpt;
  add_child(root, token_embedding(spec, gpt ? "wte" : (spec.arch == Arch::llama ? "tok_embeddings" : "embedding"), act_bytes, tp));
  if (spec.max_positions > 0) {
    // Position embeddings are whole on every TP rank, added to the (sequence-sharded) tokens.
    const double seq_share = tp.sp() ? 1.0 / static_cast<double>(tp.degree) : 1.0;
    add_child(root, embedding("wpe", spec.max_positions, spec.hidden, act_bytes));
    add_kernel(root, memory_kernel("add_positions", 3.0 * act_bytes * static_cast<double>(spec.hidden) * seq_share, 1));
  }
  Module layers;
  layers.name = gpt ? "h" : "layers";
  layers.type = "ModuleList";
  for (std::int64_t i = 0; i < spec.layers; ++i) add_child(layers, build_block(spec, i, act_bytes, options));
  add_child(root, std::move(layers));
  if (spec.final_norm) add_child(root, final_norm(spec, gpt ? "ln_f" : "norm", act_bytes, tp));
  const int kept_logit_bytes = !options.keep_logits ? 0 : options.keep_logits_fp32 ? 4 : act_bytes;
  add_child(root, output_layer(spec, spec.arch == Arch::llama ? "output" : "lm_head", act_bytes, tp, kept_logit_bytes));
  // The loop lets go of the logits after the loss unless it keeps them (training.keep_logits).
  const bool frees_logits = !options.keep_logits;
  add_child(root, options.megatron_loss
                      ? megatron_loss_module(spec, act_bytes, tp, options.loss_upcast, frees_logits)
                      : loss_module(spec, act_bytes, tp, options.loss_upcast, options.compile_loss, frees_logits, kept_logit_bytes == 4));
  return root;
}

std::int64_t embedding_numel(const Module& root) {
  std::int64_t n = 0;
  for (const auto& c : root.children) {
    if (c.is_embedding) n += c.numel();
  }
  return n;
}

}  // namespace

std::int64_t Model::block_params() const {
  std::int64_t n = 0;
  for_each_module(root, "", [&](const Module& m, const std::string&) {
    if (m.is_block && n == 0) n = m.numel();
  });
  return n;
}

double Model::mfu_flops_per_token() const {
  const auto n = static_cast<double>(total_params() - embedding_params());
  return 6.0 * n + 12.0 * static_cast<double>(spec.layers * spec.heads * spec.head_dim * seq_len);
}

Model build_model(const TransformerSpec& spec, std::int64_t seq_len, int act_bytes, const BlockOptions& options) {
  const TensorParallel& tp = options.tp;
  if (tp.degree > 1 && spec.arch != Arch::llama && spec.arch != Arch::gpt) {
    throw std::invalid_argument("tensor parallelism is modelled for llama and GPT models");
  }
  Model model;
  model.spec = spec;
  model.seq_len = seq_len;
  model.act_bytes = act_bytes;
  model.tp = tp;
  model.compiled = options.compiled;
  model.root = build_root(spec, act_bytes, options);
  if (options.unfused_attention) apply_unfused_attention(model.root, seq_len, act_bytes, options.attention_dropout);
  if (tp.degree == 1) {
    model.total_params_ = model.root.numel();
    model.embedding_params_ = embedding_numel(model.root);
  } else {
    // The whole model: what every rank of the group holds together (norms once, not t times).
    const Module whole = build_root(spec, act_bytes, {});  // only its parameters are counted
    model.total_params_ = whole.numel();
    model.embedding_params_ = embedding_numel(whole);
  }
  return model;
}

}  // namespace shardsim::model
