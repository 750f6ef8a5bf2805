// The architecture of a decoder-only transformer: a preset, a Hugging Face config.json, or
// explicit fields from the scenario, resolved into one TransformerSpec.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/file_source.hpp"
#include "config/scenario.hpp"

namespace shardsim::model {

// Block structure. llama: RMSNorm, grouped-query attention with RoPE, SwiGLU MLP, no biases
// (unless a config gives them: qkv_bias, o_bias, mlp_bias), optionally q/k norms and a sliding window.
// gpt: LayerNorm, multi-head attention and GELU MLP with biases, learned positions, final norm.
// torch_decoder: nn.TransformerDecoderLayer (post-norm self- and cross-attention, ReLU MLP),
// as in the seed's SimpleTransformer. seed_block: the seed's LargeLM TransformerBlock
// (nn.MultiheadAttention, GELU MLP, two LayerNorms).
enum class Arch { llama, gpt, torch_decoder, seed_block };

[[nodiscard]] std::string_view to_string(Arch a);

struct TransformerSpec {
  std::string name;
  Arch arch = Arch::llama;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;  // hidden / heads unless a config says otherwise
  std::int64_t ffn_hidden = 0;
  std::int64_t vocab = 0;
  std::int64_t max_positions = 0;  // learned position embeddings; 0 for rotary
  bool tie_embeddings = false;
  bool final_norm = true;
  bool head_bias = false;
  // llama blocks only (a Hugging Face config's keys):
  bool qkv_bias = false;            // wq, wk, wv have biases (Qwen2; Llama's attention_bias)
  bool o_bias = false;              // wo has a bias (Llama's attention_bias)
  bool mlp_bias = false;            // w1, w3, w2 have biases (Llama's mlp_bias)
  bool qk_norm = false;             // an RMSNorm over each head of q and of k before RoPE (Qwen3)
  std::int64_t sliding_window = 0;  // each query attends to itself and the window - 1 positions before it (Mistral); 0: all before it
};

// Built-in models, by name.
[[nodiscard]] const std::vector<TransformerSpec>& presets();

// Resolves the scenario's model section: preset / hf_config first, then explicit fields on top.
// Throws ConfigError (with the location of the offending key) for unknown presets, unreadable
// configs and inconsistent shapes (hidden not divisible by heads, ...).
// Models above kMaxParams parameters are rejected: far beyond any real model, and the point past
// which 16 bytes of model state per parameter would overflow 64-bit byte counts.
[[nodiscard]] TransformerSpec resolve_spec(const config::ModelConfig& m);
// The same, reading model.hf_config through `source` (config/file_source.hpp).
[[nodiscard]] TransformerSpec resolve_spec(const config::ModelConfig& m, const config::FileSource& source);

inline constexpr double kMaxParams = 1e15;

// Reads a Hugging Face config.json (Llama-style or GPT-2-style keys); `referenced_from` is the
// model.hf_config key, where a missing file is reported.
[[nodiscard]] TransformerSpec read_hf_config(const std::filesystem::path& file, const Location& referenced_from);
[[nodiscard]] TransformerSpec read_hf_config(const std::filesystem::path& file, const Location& referenced_from,
                                             const config::FileSource& source);

}  // namespace shardsim::model
