// The training: section of a scenario: the training loop (batch, loss, optimizer, checkpointing,
// compile, attention kernel, dropout); its float8 subsection is read by float8_settings.cpp.
#include <fmt/format.h>

#include <array>
#include <string>

#include "config/sections.hpp"

namespace shardsim::config {
namespace {

constexpr std::array<std::string_view, 3> kKeepLogitsNames{"false", "true", "fp32"};

constexpr std::array kTrainingParams{
    ParamSpec{"seq_len", "integer", "", "tokens per sequence", Range{1, 1 << 24}},
    ParamSpec{"micro_batch", "integer", "1", "sequences per GPU per micro-step", Range{1, 1 << 20}},
    ParamSpec{"grad_accum", "integer", "1", "micro-steps per optimizer step", Range{1, 1 << 16}},
    ParamSpec{"loss_upcast", "bool", "true",
              "cross-entropy on the logits cast to fp32, as torchtitan (cross_entropy(logits.float())); false: in the logits' "
              "dtype (F.cross_entropy on bf16 logits): half the loss's traffic and memory"},
    ParamSpec{"keep_logits",
              "",
              "false",
              "the training loop keeps the logits alive through backward (logits = model(x); loss(logits).backward()), and "
              "on until the next micro-step's forward returns and the name is bound again (two copies then); torchtitan "
              "deletes them first (del pred). fp32: the logits it keeps are fp32, the model's forward returning "
              "them upcast (torchtitan's Transformer.forward ended in self.output(h).float() in 2024-03, with no del pred)",
              {},
              kKeepLogitsNames},
    ParamSpec{"compile_loss", "bool", "false",
              "torch.compile of the loss function, as torchtitan applies it with training.compile since 2025-04 (bbb1b616): "
              "the cast and the log-softmax fused into reductions over the logits, no fp32 copy kept (sim/model/transformer.cpp)"},
    ParamSpec{"loss_impl",
              "",
              "torch",
              "whose cross-entropy: torch = F.cross_entropy (torchtitan's loss: cast, log-softmax, nll); megatron = "
              "Megatron-LM's vocab-parallel cross-entropy (megatron/core/tensor_parallel/cross_entropy.py: max, subtract, exp, "
              "sum and divide as separate passes over the fp32 logits, the softmax kept and turned into the gradient in place; "
              "under tensor parallelism always over the vocabulary's shards, three fp32 all-reduces a token); "
              "sim/model/transformer.cpp",
              {},
              kLossImplNames},
    ParamSpec{"no_sync", "bool", "false", "with grad_accum: keep unsharded gradients and reduce only on the last micro-step"},
    ParamSpec{"expandable_segments", "bool", "false",
              "PyTorch's caching allocator with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, as torchtitan's launch "
              "scripts set it since 2024-10 (#643): one growing segment per stream instead of a segment per large request, "
              "so that reserved memory stays near the allocated peak (sim/report/caching_allocator.hpp)"},
    ParamSpec{"optimizer",
              "",
              "adamw",
              "optimizer (state bytes per parameter, step cost): torch.optim's AdamW (with its weight decay), Adam (at its "
              "default weight_decay of 0: no decay pass) or SGD without momentum",
              {},
              kOptimizerNames},
    ParamSpec{"optimizer_impl",
              "",
              "auto",
              "how the step runs: foreach = torch.optim's default on CUDA (a kernel per operation over all tensors, "
              "80 bytes a parameter for AdamW in fp32, 72 for Adam at its default weight_decay of 0, and a temporary of "
              "the state's size); fused = one kernel "
              "(torch's fused=True, torchtitan's default since 2025-02, DeepSpeed's and Megatron's FusedAdam: 28 bytes); "
              "auto = foreach, fused under zero3, shard_optimizer and fsdp.ddp_impl: megatron (fsdp/model_state.hpp)",
              {},
              kOptimizerImplNames},
    ParamSpec{"activation_checkpointing",
              "",
              "none",
              "what the forward keeps for backward: selective = per-op (torchtitan), blocks = every k-th block in full",
              {},
              kAcNames},
    ParamSpec{"checkpoint_every", "integer", "2", "with activation_checkpointing: blocks, checkpoint blocks 0, k, 2k, ...",
              Range{1, 1 << 20}},
    ParamSpec{"dtype",
              "fp32 | bf16",
              "fp32",
              "storage type of parameters, gradients and optimizer state; bf16 is pure-bf16 training",
              {},
              kDTypeNames},
    ParamSpec{"compile", "bool", "false",
              "torch.compile per transformer block, as torchtitan applies it: the memory-bound kernels between matmuls fused "
              "(llama blocks; README, sim/model/blocks.cpp)"},
    ParamSpec{"float8", "mapping", "-", "float8 training of the linears, torchao's recipes (see training.float8)"},
    ParamSpec{"attention",
              "",
              "flash",
              "how attention runs: flash = one fused kernel (FlashAttention-2, what SDPA picks on these GPUs); unfused = the "
              "scores materialized, two batched GEMMs around a softmax kernel, all of s x s per head (SDPA's math backend, "
              "Megatron-LM before --use-flash-attn); cudnn = cuDNN's fused kernel (SDPA's cuDNN backend, Transformer Engine's "
              "FusedAttention, which Megatron-Core runs on Hopper); flash3 = FlashAttention-3. cudnn and flash3 run at the "
              "topology's gpu.efficiency.attention_cudnn_* / attention_flash3_* rates, Hopper only",
              {},
              kAttentionNames},
    ParamSpec{"dropout", "probability", "0",
              "GPT blocks: dropout on both residual branches (Megatron-LM's hidden_dropout, fused into its bias-dropout-add) "
              "and, unless attention_dropout says otherwise, on the attention probabilities; its masks and kernels are priced",
              Range{0, 0.99}},
    ParamSpec{"attention_dropout", "probability", "-",
              "GPT blocks: dropout on the attention probabilities (Megatron-LM's attention_dropout; default: dropout); priced "
              "with attention: unfused only, a flash kernel's in-kernel dropout is not modelled",
              Range{0, 0.99}},
};
constexpr Schema kTrainingSchema{"training", "the training loop", kTrainingParams};

}  // namespace

TrainingConfig read_training(const Reader& top, std::vector<ConfigWarning>& warnings) {
  const ConfigNode* node = top.node("training");
  if (node == nullptr) top.fail("training", "missing required key (expected at least {seq_len: ...})");
  Reader r(*node, "training", kTrainingSchema);
  r.finish();
  TrainingConfig t;
  t.seq_len = r.integer("seq_len");
  t.seq_len_where = r.where("seq_len");
  t.micro_batch = r.integer("micro_batch");
  t.grad_accum = r.integer("grad_accum");
  t.loss_upcast = r.boolean("loss_upcast");
  const std::string keep_logits = r.choice("keep_logits");
  t.keep_logits = keep_logits != "false";
  t.keep_logits_fp32 = keep_logits == "fp32";
  t.keep_logits_where = r.where("keep_logits");
  t.compile_loss = r.boolean("compile_loss");
  if (t.keep_logits_fp32 && (!t.loss_upcast || t.compile_loss)) {
    r.fail("keep_logits",
           "fp32 logits come from a model that upcasts its own output, so the loss works on them in fp32, eagerly; "
           "expected keep_logits: true with training.loss_upcast: false or training.compile_loss: true");
  }
  if (t.compile_loss && r.has("loss_upcast")) {
    warnings.push_back({r.where("loss_upcast"), "training.loss_upcast",
                        "a compiled loss (training.compile_loss) upcasts inside its fused reductions and writes no copy of the "
                        "logits, so it costs the same with or without the upcast; it is ignored"});
  }
  t.loss_impl = {pick<LossImpl>(r, "loss_impl", kLossImplNames), r.where("loss_impl")};
  if (t.loss_impl.value == LossImpl::megatron && t.compile_loss) {
    r.fail("loss_impl",
           "Megatron-LM's cross-entropy runs eagerly (its fused variant, --cross-entropy-loss-fusion, is not modelled); "
           "expected loss_impl: torch with training.compile_loss: true, or compile_loss: false");
  }
  t.no_sync = r.boolean("no_sync");
  if (t.no_sync && t.grad_accum == 1) {
    warnings.push_back({r.where("no_sync"), "training.no_sync",
                        "skips the gradient reduction of every micro-step but the last, and with training.grad_accum: 1 "
                        "there is one micro-step a step; it is ignored"});
  }
  t.expandable_segments = r.boolean("expandable_segments");
  t.optimizer = pick<Optimizer>(r, "optimizer");
  t.optimizer_impl = {pick<OptimizerImpl>(r, "optimizer_impl", kOptimizerImplNames), r.where("optimizer_impl")};
  t.activation_checkpointing = pick<ActivationCheckpointing>(r, "activation_checkpointing");
  t.checkpoint_every = static_cast<int>(r.integer("checkpoint_every"));
  if (r.has("checkpoint_every") && t.activation_checkpointing != ActivationCheckpointing::blocks) {
    warnings.push_back({r.where("checkpoint_every"), "training.checkpoint_every",
                        fmt::format("the spacing of the blocks activation_checkpointing: blocks checkpoints; with {} it is ignored",
                                    to_string(t.activation_checkpointing))});
  }
  t.dtype = pick<DType>(r, "dtype");
  t.compile = {r.boolean("compile"), r.where("compile")};
  t.attention = {pick<AttentionKernel>(r, "attention"), r.where("attention")};
  t.dropout = {r.number("dropout"), r.where("dropout")};
  t.attention_dropout_given = r.has("attention_dropout");
  t.attention_dropout =
      t.attention_dropout_given ? Located<double>{r.number("attention_dropout"), r.where("attention_dropout")} : t.dropout;
  t.float8 = read_float8(r);
  if (t.dtype == DType::fp16) r.fail("dtype", "expected fp32 or bf16 (pure fp16 training is not modelled)");
  return t;
}

Schema training_schema() {
  return kTrainingSchema;
}

}  // namespace shardsim::config
