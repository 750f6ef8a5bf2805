// The architecture of a decoder-only transformer: a preset, a Hugging Face config.json, or
// explicit fields from the scenario, resolved into one TransformerSpec.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/scenario.hpp"

namespace shardsim::model {

// Block structure. llama: RMSNorm, grouped-query attention with RoPE, SwiGLU MLP, no biases.
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
};

// Built-in models, by name.
[[nodiscard]] const std::vector<TransformerSpec>& presets();

// Resolves the scenario's model section: preset / hf_config first, then explicit fields on top.
// Throws ConfigError (with the location of the offending key) for unknown presets, unreadable
// configs and inconsistent shapes (hidden not divisible by heads, ...).
[[nodiscard]] TransformerSpec resolve_spec(const config::ModelConfig& m);

// Reads a Hugging Face config.json (Llama-style or GPT-2-style keys).
[[nodiscard]] TransformerSpec read_hf_config(const std::filesystem::path& file, const Location& referenced_from);

}  // namespace shardsim::model
