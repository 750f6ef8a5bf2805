// Transformer blocks per architecture: parameters in PyTorch's registration order, the forward
// program, and the activation memory each checkpointing mode keeps.
//
// Activation bytes per token (a = bytes per activation element, q = heads x head_dim, d = kv
// heads x head_dim, lse = 4 x heads for FlashAttention's fp32 logsumexp), counted from what
// autograd saves in eager PyTorch:
//   llama none:      x, norm1 out, SDPA q/k/v (k, v repeated to q) and out, wo input, norm2 in
//                    and out, w1, w3, silu and mul outputs      = a(4h + 5q + 4f) + lse
//   llama selective: torchtitan per-op SAC keeps x, wq, wv, SDPA out, w1, w2 outputs
//                    (shared/reference/d1-hand-model.md)        = a(2h + 2q + d + f) + lse
//   gpt none:        x, ln1 out, c_attn out (q, k, v), SDPA out, c_proj in, ln2 in and out,
//                    c_fc out, gelu out                          = a(9h + 2f) + lse
//   gpt selective:   x, c_attn out, SDPA out, c_fc out           = a(5h + f) + lse
//   (training.dropout on GPT: two 1-byte residual masks, 2h, kept without checkpointing; unfused
//   attention's probabilities instead of lse: model/attention_impl.hpp)
//   full (any):      the block input only                        = a h
// While a block's backward runs, what the mode did not keep is recomputed and alive, plus
// gradient buffers of about a(h + f).
//
// Tensor parallelism over t ranks (llama and GPT; Megatron-LM's column/row split as torchtitan
// applies it): wq, wk, wv, w1, w3 hold 1/t of their output features, wo and w2 1/t of their input
// features, each rank 1/t of the heads; norms are replicated. Entering attention and the MLP
// all-gathers the sequence shards (sequence parallel) or does nothing; leaving them
// reduce-scatters or all-reduces (kernels.hpp tp_enter / tp_leave). Per-token activations: what
// is q-, d- or f-wide is 1/t; h-wide tensors are 1/t on sequence shards (sequence parallel) and
// whole where a matmul keeps its all-gathered input or its unreduced output:
//   none:      sp  a(2h/t + 2h + (5q + 4f)/t) + lse/t    (x, norm2 in sharded; both norm outputs whole)
//              tp  a(4h + (5q + 4f)/t) + lse/t
//   selective: sp  a(h/t + h + (2q + d + f)/t) + lse/t   (x sharded; w2's unreduced output whole)
//              tp  a(2h + (2q + d + f)/t) + lse/t
//   full:      sp  a h/t;  tp  a h
//   backward gradient buffers: a(h + f/t)
// GPT the same way (c_attn and c_fc column-parallel, both c_proj row-parallel; w = h/t):
//   none:      sp  a(2h/t + 2h + 5w + 2f/t) + lse/t;  tp  a(4h + 5w + 2f/t) + lse/t
//   selective: sp  a(h/t + 4w + f/t) + lse/t;        tp  a(h + 4w + f/t) + lse/t
//
// torch.compile per block (training.compile, as torchtitan applies it): Inductor fuses the
// memory-bound ops between the matmuls and SDPA (which stay library kernels) into one kernel
// each, reading its inputs and writing its outputs once, in the activation dtype:
//   attention_norm            RMSNorm: read x, write normed                    2ah    (eager 28h + 4ah, 7 kernels)
//   rope                      q and k: read, rotate in registers, write         2a(q + d)  (eager (2a + 16)(q + d), 6)
//   repeat_kv                 k and v in one kernel                              2a(d + q)  (same bytes, 2 kernels)
//   residual_add + ffn_norm   read x and the attention output, write the sum
//                             and its norm                                       4ah    (eager 3ah + 28h + 4ah, 8)
//   silu + mul                read w1 and w3 outputs, write their product        3af    (eager 5af, 2)
//   residual_add (last)       3ah, as eager (the next block is another compiled region)
//   attn_out_contiguous       a copy, 2aq, as eager
// Backward kernels keep eager's backward / forward traffic ratio. What the forward saves for
// backward is left as eager counts it (Inductor's recompute choices would save somewhat less).
#include "model/blocks.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "model/kernels.hpp"

namespace shardsim::model {
namespace {

// `largest`: bytes per token of its widest activation, a(max(h, f)), the largest tensor its
// backward allocates at once.
void set_activation(Module& block, const std::array<double, 3>& saved, double grads, double largest) {
  block.activation.saved = saved;
  for (std::size_t mode = 0; mode < 3; ++mode) block.activation.backward_transient[mode] = saved[0] - saved[mode] + grads;
  block.activation.largest_tensor = largest;
}

void set_activation(Module& block, double none, double selective, double a, double h, double f) {
  set_activation(block, {none, selective, a * h}, a * (h + f), a * std::max(h, f));
}

// Qwen3's RMSNorm over each head of q or of k (a weight of head_dim), on the rank's `width` of
// them per token. Compiled, Inductor folds it into the RoPE kernel that reads and writes the same
// tensor, whose traffic stays as it is.
Module head_norm(std::string name, std::int64_t head_dim, double width, int act, bool fused) {
  Module m = rms_norm(std::move(name), head_dim, act);
  if (fused) {
    m.program.clear();
  } else {
    scale_memory_kernels(m, width / static_cast<double>(head_dim));
  }
  return m;
}

Module llama_block(const TransformerSpec& s, std::int64_t index, int act, const BlockOptions& options) {
  const TensorParallel& tp = options.tp;
  const bool fused = options.compiled;
  const double a = act;
  const std::int64_t t = tp.degree;
  const double ti = static_cast<double>(t);
  const double seq_share = tp.sp() ? 1.0 / ti : 1.0;  // of the sequence a rank's norms and residuals see
  const auto h = static_cast<double>(s.hidden);
  const std::int64_t q_dim = s.heads * s.head_dim / t;  // this rank's share of every wide dimension
  const std::int64_t kv_dim = s.kv_heads * s.head_dim / t;
  const std::int64_t ffn = s.ffn_hidden / t;
  const auto q = static_cast<double>(q_dim);
  const auto d = static_cast<double>(kv_dim);
  const auto f = static_cast<double>(ffn);

  Module block;
  block.name = std::to_string(index);
  block.type = "TransformerBlock";
  block.is_block = true;

  Module attn;
  attn.name = "attention";
  attn.type = "Attention";
  if (t > 1) add_kernel(attn, tp_enter("tp_enter", tp, a * h, 3, fused));  // wq, wk, wv read it
  add_child(attn, sharded_linear("wq", s.hidden, q_dim, s.qkv_bias, s.hidden, q_dim * t));
  add_child(attn, sharded_linear("wk", s.hidden, kv_dim, s.qkv_bias, s.hidden, kv_dim * t));
  add_child(attn, sharded_linear("wv", s.hidden, kv_dim, s.qkv_bias, s.hidden, kv_dim * t));
  if (s.qk_norm) {
    add_child(attn, head_norm("q_norm", s.head_dim, q, act, fused));
    add_child(attn, head_norm("k_norm", s.head_dim, d, act, fused));
  }
  // RoPE on q and k in fp32 complex: upcast (a+4), complex mul (4+4), downcast (4+a).
  add_kernel(attn, fused ? memory_kernel("rope", 2 * a * (q + d), 1) : memory_kernel("rope", (2 * a + 16) * (q + d), 6));
  if (s.kv_heads != s.heads) {
    // repeat_kv materialises k and v for every query head: read d, write q, for each.
    add_kernel(attn, memory_kernel("repeat_kv", 2 * a * (d + q), fused ? 1 : 2));
  }
  if (options.cp > 1) {
    // Context parallelism (torch's context_parallel, all-gather rotation): SDPA's K and V (after
    // repeat_kv: q wide each) are all-gathered over the cp group, their gradients reduce-scattered.
    // Per token of the rank's shard the gathered tensors are cp times its own.
    const double kv = 2 * a * (s.kv_heads != s.heads ? q : d);
    Kernel gather = tp_comm_kernel("cp_kv", TpComm::all_gather, TpComm::reduce_scatter, kv * options.cp);
    gather.context_parallel = true;
    add_kernel(attn, std::move(gather));
  }
  const int heads = static_cast<int>(s.heads / t);
  add_kernel(attn, attention_kernel("sdpa", heads, heads, static_cast<int>(s.head_dim), true, s.sliding_window));
  add_kernel(attn, memory_kernel("attn_out_contiguous", 2 * a * q, 1));
  add_child(attn, sharded_linear("wo", q_dim, s.hidden, s.o_bias, q_dim * t, s.hidden));
  if (t > 1) add_kernel(attn, tp_leave("tp_leave", tp, a * h));

  Module mlp;
  mlp.name = "feed_forward";
  mlp.type = "FeedForward";
  if (t > 1) add_kernel(mlp, tp_enter("tp_enter", tp, a * h, 2, fused));  // w1, w3 read it
  add_child(mlp, sharded_linear("w1", s.hidden, ffn, s.mlp_bias, s.hidden, ffn * t));
  if (!fused) add_kernel(mlp, memory_kernel("silu", 2 * a * f, 1));
  add_child(mlp, sharded_linear("w3", s.hidden, ffn, s.mlp_bias, s.hidden, ffn * t));
  add_kernel(mlp, memory_kernel(fused ? "silu_mul" : "mul", 3 * a * f, 1));
  add_child(mlp, sharded_linear("w2", ffn, s.hidden, s.mlp_bias, ffn * t, s.hidden));
  if (t > 1) add_kernel(mlp, tp_leave("tp_leave", tp, a * h));

  Module norm1 = rms_norm("attention_norm", s.hidden, act);
  Module norm2 = rms_norm("ffn_norm", s.hidden, act);
  if (fused) {
    fuse_memory_kernels(norm1, 2 * a * h);
    fuse_memory_kernels(norm2, 4 * a * h);  // with the residual add before it
  }
  scale_memory_kernels(norm1, seq_share);
  scale_memory_kernels(norm2, seq_share);
  add_child(block, std::move(norm1));
  add_child(block, std::move(attn));
  if (!fused) add_kernel(block, memory_kernel("residual_add", 3 * a * h * seq_share, 1));
  add_child(block, std::move(norm2));
  add_child(block, std::move(mlp));
  add_kernel(block, memory_kernel("residual_add", 3 * a * h * seq_share, 1));

  const double lse = 4.0 * static_cast<double>(heads);
  if (t == 1) {
    set_activation(block, a * (4 * h + 5 * q + 4 * f) + lse, a * (2 * h + 2 * q + d + f) + lse, a, h, f);
  } else if (tp.sp()) {
    // wq wk wv's and w1 w3's inputs: TensorParallel::kept_column_inputs.
    set_activation(block,
                   {a * (2 * h / ti + tp.kept_column_inputs(h) + 5 * q + 4 * f) + lse, a * (h / ti + h + 2 * q + d + f) + lse, a * h / ti},
                   a * (h + f + tp.regathered_input(h)), a * std::max(h, f));
  } else {
    set_activation(block, {a * (4 * h + 5 * q + 4 * f) + lse, a * (2 * h + 2 * q + d + f) + lse, a * h}, a * (h + f), a * std::max(h, f));
  }
  // q_norm and k_norm keep their inputs, wq's and wk's outputs, which nothing else keeps without
  // checkpointing; per-op SAC keeps wq's output already and recomputes wk's.
  if (s.qk_norm) add_saved_activation(block, {a * (q + d), 0, 0});
  mark_selective_recompute(block);
  return block;
}

// nn.MultiheadAttention: in_proj_weight [3h, h], in_proj_bias [3h], out_proj Linear(h, h).
Module multihead_attention(std::string name, const TransformerSpec& s, int act, bool causal) {
  const double a = act;
  const auto h = static_cast<double>(s.hidden);
  Module m;
  m.name = std::move(name);
  m.type = "MultiheadAttention";
  m.params.push_back(Param{"in_proj_weight", {3 * s.hidden, s.hidden}});
  m.params.push_back(Param{"in_proj_bias", {3 * s.hidden}});
  add_kernel(m, matmul_kernel("in_proj", 3 * s.hidden, s.hidden));
  add_kernel(m, attention_kernel("sdpa", static_cast<int>(s.heads), static_cast<int>(s.heads), static_cast<int>(s.head_dim), causal));
  add_kernel(m, memory_kernel("attn_out_contiguous", 2 * a * h, 1));
  add_child(m, linear("out_proj", s.hidden, s.hidden, true));
  return m;
}

Module gpt_block(const TransformerSpec& s, std::int64_t index, int act, const BlockOptions& options) {
  const TensorParallel& tp = options.tp;
  const double a = act;
  const std::int64_t t = tp.degree;
  const double ti = static_cast<double>(t);
  const double seq_share = tp.sp() ? 1.0 / ti : 1.0;
  const auto h = static_cast<double>(s.hidden);
  const std::int64_t width = s.heads * s.head_dim / t;  // this rank's share of the attention width
  const std::int64_t ffn = s.ffn_hidden / t;
  const auto w = static_cast<double>(width);
  const auto f = static_cast<double>(ffn);
  Module block;
  block.name = std::to_string(index);
  block.type = "GPT2Block";
  block.is_block = true;

  // Megatron-LM's split: c_attn and c_fc column-parallel (weight and bias), the c_proj layers
  // row-parallel (their bias whole, added after the reduction).
  Module attn;
  attn.name = "attn";
  attn.type = "GPT2Attention";
  if (t > 1) add_kernel(attn, tp_enter("tp_enter", tp, a * h));
  add_child(attn, sharded_linear("c_attn", s.hidden, 3 * width, true, s.hidden, 3 * width * t));
  const int heads = static_cast<int>(s.heads / t);
  add_kernel(attn, attention_kernel("sdpa", heads, heads, static_cast<int>(s.head_dim), true));
  add_kernel(attn, memory_kernel("attn_out_contiguous", 2 * a * w, 1));
  add_child(attn, sharded_linear("c_proj", width, s.hidden, true, width * t, s.hidden));
  if (t > 1) add_kernel(attn, tp_leave("tp_leave", tp, a * h));

  Module mlp;
  mlp.name = "mlp";
  mlp.type = "GPT2MLP";
  if (t > 1) add_kernel(mlp, tp_enter("tp_enter", tp, a * h));
  add_child(mlp, sharded_linear("c_fc", s.hidden, ffn, true, s.hidden, ffn * t));
  add_kernel(mlp, memory_kernel("gelu", 2 * a * f, 1));
  add_child(mlp, sharded_linear("c_proj", ffn, s.hidden, true, ffn * t, s.hidden));
  if (t > 1) add_kernel(mlp, tp_leave("tp_leave", tp, a * h));

  Module ln1 = layer_norm("ln_1", s.hidden, act);
  Module ln2 = layer_norm("ln_2", s.hidden, act);
  scale_memory_kernels(ln1, seq_share);
  scale_memory_kernels(ln2, seq_share);
  add_child(block, std::move(ln1));
  // Hidden dropout (training.dropout) on each branch, fused into the residual add as Megatron's
  // bias_dropout_add: forward also writes a 1-byte mask, (3a + 1) h. Backward (2 x forward, as
  // every memory kernel here) covers accumulating the skip's gradient (3a h) and the dropout's
  // (read the gradient and the mask, write: (2a + 1) h).
  const double mask = options.dropout > 0 ? 1 : 0;
  auto residual = [&] { add_kernel(block, memory_kernel("residual_add", (3 * a + mask) * h * seq_share, 1)); };
  add_child(block, std::move(attn));
  residual();
  add_child(block, std::move(ln2));
  add_child(block, std::move(mlp));
  residual();

  const double lse = 4.0 * static_cast<double>(heads);
  if (t == 1) {
    set_activation(block, a * (9 * h + 2 * f) + lse, a * (5 * h + f) + lse, a, h, f);
  } else if (tp.sp()) {
    // c_attn's and c_fc's inputs: TensorParallel::kept_column_inputs.
    set_activation(block, {a * (2 * h / ti + tp.kept_column_inputs(h) + 5 * w + 2 * f) + lse, a * (h / ti + 4 * w + f) + lse, a * h / ti},
                   a * (h + f + tp.regathered_input(h)), a * std::max(h, f));
  } else {
    set_activation(block, {a * (4 * h + 5 * w + 2 * f) + lse, a * (h + 4 * w + f) + lse, a * h}, a * (h + f), a * std::max(h, f));
  }
  add_saved_activation(block, {2 * mask * h * seq_share, 0, 0});  // the dropout masks, recomputed under checkpointing
  mark_selective_recompute(block);
  return block;
}

// The seed's LargeLM block: h = x + attn(norm1(x)); h = h + ffn(norm2(h)); ffn = Linear, GELU, Linear.
Module seed_block(const TransformerSpec& s, std::int64_t index, int act) {
  const double a = act;
  const auto h = static_cast<double>(s.hidden);
  const auto f = static_cast<double>(s.ffn_hidden);
  Module block;
  block.name = std::to_string(index);
  block.type = "TransformerBlock";
  block.is_block = true;
  // Registration order (named_parameters): attn, ffn, norm1, norm2; call order differs.
  const int attn = static_cast<int>(block.children.size());
  block.children.push_back(multihead_attention("attn", s, act, false));
  Module ffn;
  ffn.name = "ffn";
  ffn.type = "Sequential";
  Module l0 = linear("0", s.hidden, s.ffn_hidden, true);
  Module l2 = linear("2", s.ffn_hidden, s.hidden, true);
  add_child(ffn, std::move(l0));
  add_kernel(ffn, memory_kernel("gelu", 2 * a * f, 1));
  add_child(ffn, std::move(l2));
  const int ffn_index = static_cast<int>(block.children.size());
  block.children.push_back(std::move(ffn));
  const int norm1 = static_cast<int>(block.children.size());
  block.children.push_back(layer_norm("norm1", s.hidden, act));
  const int norm2 = static_cast<int>(block.children.size());
  block.children.push_back(layer_norm("norm2", s.hidden, act));
  block.program = {ProgramItem{norm1, {}}, ProgramItem{attn, {}},      ProgramItem{-1, memory_kernel("residual_add", 3 * a * h, 1)},
                   ProgramItem{norm2, {}}, ProgramItem{ffn_index, {}}, ProgramItem{-1, memory_kernel("residual_add", 3 * a * h, 1)}};
  const double lse = 4.0 * static_cast<double>(s.heads);
  set_activation(block, a * (9 * h + 2 * f) + lse, a * (5 * h + f) + lse, a, h, f);
  mark_selective_recompute(block);
  return block;
}

// nn.TransformerDecoderLayer(d_model, nhead) with its defaults: post-norm, ReLU, dim_feedforward
// as given; memory = the layer's own input (the seed never says what the memory is).
Module torch_decoder_block(const TransformerSpec& s, std::int64_t index, int act) {
  const double a = act;
  const auto h = static_cast<double>(s.hidden);
  const auto f = static_cast<double>(s.ffn_hidden);
  Module block;
  block.name = std::to_string(index);
  block.type = "TransformerDecoderLayer";
  block.is_block = true;
  const int self_attn = static_cast<int>(block.children.size());
  block.children.push_back(multihead_attention("self_attn", s, act, false));
  const int cross_attn = static_cast<int>(block.children.size());
  block.children.push_back(multihead_attention("multihead_attn", s, act, false));
  const int linear1 = static_cast<int>(block.children.size());
  block.children.push_back(linear("linear1", s.hidden, s.ffn_hidden, true));
  const int linear2 = static_cast<int>(block.children.size());
  block.children.push_back(linear("linear2", s.ffn_hidden, s.hidden, true));
  const int norm1 = static_cast<int>(block.children.size());
  block.children.push_back(layer_norm("norm1", s.hidden, act));
  const int norm2 = static_cast<int>(block.children.size());
  block.children.push_back(layer_norm("norm2", s.hidden, act));
  const int norm3 = static_cast<int>(block.children.size());
  block.children.push_back(layer_norm("norm3", s.hidden, act));
  auto add = [&] { return ProgramItem{-1, memory_kernel("residual_add", 3 * a * h, 1)}; };
  block.program = {ProgramItem{self_attn, {}},
                   add(),
                   ProgramItem{norm1, {}},
                   ProgramItem{cross_attn, {}},
                   add(),
                   ProgramItem{norm2, {}},
                   ProgramItem{linear1, {}},
                   ProgramItem{-1, memory_kernel("relu", 2 * a * f, 1)},
                   ProgramItem{linear2, {}},
                   add(),
                   ProgramItem{norm3, {}}};
  const double lse = 4.0 * static_cast<double>(s.heads);
  set_activation(block, a * (16 * h + 2 * f) + 2 * lse, a * (8 * h + f) + 2 * lse, a, h, f);
  mark_selective_recompute(block);
  return block;
}

}  // namespace

Module build_block(const TransformerSpec& s, std::int64_t index, int act_bytes, const BlockOptions& options) {
  if (options.tp.degree > 1 && s.arch != Arch::llama && s.arch != Arch::gpt) {
    throw std::invalid_argument("tensor parallelism is modelled for llama and GPT blocks only");
  }
  if (options.compiled && s.arch != Arch::llama) throw std::invalid_argument("torch.compile is modelled for llama blocks only");
  switch (s.arch) {
    case Arch::llama:
      return llama_block(s, index, act_bytes, options);
    case Arch::gpt:
      return gpt_block(s, index, act_bytes, options);
    case Arch::seed_block:
      return seed_block(s, index, act_bytes);
    case Arch::torch_decoder:
      return torch_decoder_block(s, index, act_bytes);
  }
  return llama_block(s, index, act_bytes, options);
}

}  // namespace shardsim::model
