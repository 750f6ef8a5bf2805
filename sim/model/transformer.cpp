#include "model/transformer.hpp"

#include "model/blocks.hpp"
#include "model/kernels.hpp"

namespace shardsim::model {
namespace {

// The loss as torchtitan computes it: cross_entropy(logits.float(), labels). Forward traffic per
// token: upcast (a+4)V, log-softmax (three fp32 passes, 12V), nll (~4V) = about 22V with a = 2;
// backward about 18V. Autograd keeps the fp32 log-softmax output (4V); its backward holds the
// incoming and outgoing fp32 gradients (8V) on top (d1-hand-model.md: 3 x 7.83 GiB at the peak).
Module loss_module(const TransformerSpec& s, int act) {
  const auto v = static_cast<double>(s.vocab);
  Module m;
  m.name = "loss";
  m.type = "CrossEntropyLoss";
  const double fwd = (act + 4.0) * v + 12.0 * v + 4.0 * v;
  add_kernel(m, memory_kernel("cross_entropy", fwd, 4, 18.0 * v / fwd));
  m.activation.saved = {4 * v, 4 * v, 4 * v};
  m.activation.backward_transient = {8 * v, 8 * v, 8 * v};
  return m;
}

// Root-level modules keep their input for backward whatever the checkpointing mode.
void keep_input(Module& m, double bytes_per_token, double backward_transient = 0) {
  m.activation.saved = {bytes_per_token, bytes_per_token, bytes_per_token};
  m.activation.backward_transient = {backward_transient, backward_transient, backward_transient};
}

Module output_layer(const TransformerSpec& s, std::string name, int act) {
  Module out = linear(std::move(name), s.hidden, s.vocab, s.head_bias);
  if (s.tie_embeddings) out.params.clear();  // the weight is the embedding's, counted once
  // Keeps its input; its backward holds the bf16 gradient of the logits.
  keep_input(out, static_cast<double>(act) * static_cast<double>(s.hidden), static_cast<double>(act) * static_cast<double>(s.vocab));
  return out;
}

Module final_norm(const TransformerSpec& s, std::string name, int act) {
  Module n = s.arch == Arch::llama ? rms_norm(std::move(name), s.hidden, act) : layer_norm(std::move(name), s.hidden, act);
  keep_input(n, static_cast<double>(act) * static_cast<double>(s.hidden));
  return n;
}

}  // namespace

std::int64_t Model::embedding_params() const {
  std::int64_t n = 0;
  for (const auto& c : root.children) {
    if (c.is_embedding) n += c.numel();
  }
  return n;
}

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

Model build_model(const TransformerSpec& spec, std::int64_t seq_len, int act_bytes) {
  Model model;
  model.spec = spec;
  model.seq_len = seq_len;
  model.act_bytes = act_bytes;
  Module& root = model.root;
  root.type = "Transformer";

  const bool gpt = spec.arch == Arch::gpt;
  add_child(root, embedding(gpt ? "wte" : (spec.arch == Arch::llama ? "tok_embeddings" : "embedding"), spec.vocab, spec.hidden, act_bytes));
  if (spec.max_positions > 0) {
    add_child(root, embedding("wpe", spec.max_positions, spec.hidden, act_bytes));
    add_kernel(root, memory_kernel("add_positions", 3.0 * act_bytes * static_cast<double>(spec.hidden), 1));
  }
  Module layers;
  layers.name = gpt ? "h" : "layers";
  layers.type = "ModuleList";
  for (std::int64_t i = 0; i < spec.layers; ++i) add_child(layers, build_block(spec, i, act_bytes));
  add_child(root, std::move(layers));
  if (spec.final_norm) add_child(root, final_norm(spec, gpt ? "ln_f" : "norm", act_bytes));
  add_child(root, output_layer(spec, spec.arch == Arch::llama ? "output" : "lm_head", act_bytes));
  add_child(root, loss_module(spec, act_bytes));
  return model;
}

}  // namespace shardsim::model
