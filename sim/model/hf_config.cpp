// Reads the architecture from a Hugging Face config.json. Llama-family keys (LlamaConfig,
// MistralConfig, Qwen2Config, Qwen3Config) and GPT-2 keys (GPT2Config) are understood; anything
// else is rejected with the list of supported model_type values. Errors point at the offending
// value (file:line:col) and name its key.
//
// What the Llama family's modeling code adds to the plain Llama block (transformers'
// modeling_llama / _mistral / _qwen2 / _qwen3):
// - llama: attention_bias (q, k, v and o projections with biases), mlp_bias (gate, up, down);
// - mistral: sliding_window (null: none), each query attending to the last sliding_window tokens;
// - qwen2: q, k and v projections always with biases; use_sliding_window puts a window on the
//   layers from max_window_layers on, which is not modelled (refused);
// - qwen3: attention_bias as Llama's, an RMSNorm over each head of q and of k (q_norm, k_norm,
//   head_dim wide), use_sliding_window as Qwen2's.
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "config/yaml_load.hpp"
#include "core/json_text.hpp"
#include "core/reader.hpp"
#include "model/transformer_spec.hpp"

namespace shardsim::model {
namespace {

using nlohmann::json;

class ConfigJson {
 public:
  ConfigJson(const std::filesystem::path& file, std::string text, json j)
      : file_(file.string()), text_(std::move(text)), j_(std::move(j)) {}

  [[nodiscard]] Location where(const char* key) const {
    if (auto at = json_path_location(file_, text_, key)) return *at;
    return json_location(file_, text_, text_.find('{'));  // a missing key: the object itself
  }

  [[nodiscard]] bool has(const char* key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }

  // An integer in [min, max]; `fallback` when absent or null, unless required.
  [[nodiscard]] std::int64_t integer(const char* key, std::int64_t min, std::int64_t max, std::optional<std::int64_t> fallback) const {
    if (!has(key)) {
      if (!fallback)
        throw ConfigError(where(key), key, fmt::format("missing required key (expected an integer between {} and {})", min, max));
      return *fallback;
    }
    const json& v = j_.at(key);
    std::optional<std::int64_t> value;
    if (v.is_number_unsigned()) {
      if (v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)) value = static_cast<std::int64_t>(v.get<std::uint64_t>());
    } else if (v.is_number_integer()) {
      value = v.get<std::int64_t>();
    }
    if (!value || *value < min || *value > max) {
      throw ConfigError(where(key), key, fmt::format("expected an integer between {} and {}; got {}", min, max, shown(v)));
    }
    return *value;
  }

  [[nodiscard]] bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_boolean()) throw ConfigError(where(key), key, fmt::format("expected true or false; got {}", shown(v)));
    return v.get<bool>();
  }

  [[nodiscard]] std::string text(const char* key) const {
    if (!has(key)) throw ConfigError(where(key), key, "missing required key (expected a string such as \"llama\")");
    const json& v = j_.at(key);
    if (!v.is_string()) throw ConfigError(where(key), key, fmt::format("expected a string; got {}", shown(v)));
    return v.get<std::string>();
  }

 private:
  static std::string shown(const json& v) {
    if (v.is_string()) return quote(v.get<std::string>());
    if (v.is_object()) return "an object";
    if (v.is_array()) return "a list";
    return v.dump();
  }

  std::string file_;
  std::string text_;
  json j_;
};

}  // namespace

TransformerSpec read_hf_config(const std::filesystem::path& file, const Location& referenced_from) {
  return read_hf_config(file, referenced_from, config::DiskFiles{});
}

TransformerSpec read_hf_config(const std::filesystem::path& file, const Location& referenced_from, const config::FileSource& source) {
  std::string text = config::read_config_file(source, file, config::FileRef{referenced_from, "model.hf_config"});
  const Location top{file.string(), 1, 1};
  config::check_text(text, Location{file.string(), 0, 0}, "JSON text (a Hugging Face config.json)");
  json j = parse_json(text, file.string(), "a Hugging Face config.json");
  if (!j.is_object()) throw ConfigError(top, "", "expected a JSON object (a Hugging Face config.json)");
  const ConfigJson c(file, std::move(text), std::move(j));
  const std::string type = c.text("model_type");
  using L = config::ModelLimits;

  TransformerSpec s;
  s.name = fmt::format("{} ({})", file.filename().string(), type);
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3") {
    s.arch = Arch::llama;
    s.layers = c.integer("num_hidden_layers", 1, L::layers, std::nullopt);
    s.hidden = c.integer("hidden_size", 1, L::hidden, std::nullopt);
    s.heads = c.integer("num_attention_heads", 1, L::heads, std::nullopt);
    s.kv_heads = c.integer("num_key_value_heads", 1, L::heads, s.heads);
    // LlamaAttention: head_dim = config.head_dim, else hidden_size // num_attention_heads.
    s.head_dim = c.integer("head_dim", 1, L::hidden, s.hidden / s.heads);
    s.ffn_hidden = c.integer("intermediate_size", 1, L::ffn_hidden, std::nullopt);
    s.vocab = c.integer("vocab_size", 1, L::vocab, std::nullopt);
    s.tie_embeddings = c.boolean("tie_word_embeddings", false);
    if (type == "llama" || type == "qwen3") {
      s.qkv_bias = s.o_bias = c.boolean("attention_bias", false);
    }
    if (type == "llama") s.mlp_bias = c.boolean("mlp_bias", false);
    if (type == "qwen2") s.qkv_bias = true;  // Qwen2Attention: q_proj, k_proj, v_proj with bias=True, o_proj without
    s.qk_norm = type == "qwen3";
    if (type == "mistral") s.sliding_window = c.integer("sliding_window", 1, L::max_positions, 0);
    if ((type == "qwen2" || type == "qwen3") && c.boolean("use_sliding_window", false)) {
      throw ConfigError(c.where("use_sliding_window"), "use_sliding_window",
                        fmt::format("{}'s sliding window on the layers from max_window_layers on is not modelled; expected false "
                                    "(every layer attending to all the tokens before it)",
                                    type == "qwen2" ? "Qwen2" : "Qwen3"));
    }
    if (s.head_dim == 0) {
      throw ConfigError(c.where("num_attention_heads"), "num_attention_heads",
                        fmt::format("expected at most hidden_size ({}) heads; got {}", s.hidden, s.heads));
    }
  } else if (type == "gpt2") {
    s.arch = Arch::gpt;
    s.layers = c.integer("n_layer", 1, L::layers, std::nullopt);
    s.hidden = c.integer("n_embd", 1, L::hidden, std::nullopt);
    s.heads = c.integer("n_head", 1, L::heads, std::nullopt);
    if (s.hidden % s.heads != 0) {
      throw ConfigError(c.where("n_head"), "n_head", fmt::format("n_embd {} is not divisible by n_head {}", s.hidden, s.heads));
    }
    s.kv_heads = s.heads;
    s.head_dim = s.hidden / s.heads;
    s.ffn_hidden = c.integer("n_inner", 1, L::ffn_hidden, 4 * s.hidden);
    s.vocab = c.integer("vocab_size", 1, L::vocab, std::nullopt);
    s.max_positions = c.integer("n_positions", 0, L::max_positions, 1024);
    s.tie_embeddings = c.boolean("tie_word_embeddings", true);
  } else {
    throw ConfigError(c.where("model_type"), "model_type",
                      fmt::format("unsupported model_type {}; expected one of llama, mistral, qwen2, qwen3, gpt2", quote(type)));
  }
  return s;
}

}  // namespace shardsim::model
