// Reads the architecture from a Hugging Face config.json. Llama-family keys (LlamaConfig,
// MistralConfig, Qwen2Config) and GPT-2 keys (GPT2Config) are understood; anything else is
// rejected with the list of supported model_type values.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/transformer_spec.hpp"

namespace shardsim::model {
namespace {

using nlohmann::json;

// nlohmann reports a byte offset; users want a line and a column.
Location offset_to_location(const std::string& file, const std::string& text, std::size_t offset) {
  Location l{file, 1, 1};
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++l.line;
      l.column = 1;
    } else {
      ++l.column;
    }
  }
  return l;
}

std::int64_t get_int(const json& j, const char* key, const Location& where, bool required, std::int64_t fallback = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw ConfigError(where, key, "missing required key in config.json (expected a positive integer)");
    return fallback;
  }
  if (!it->is_number_integer() || it->get<std::int64_t>() <= 0) {
    throw ConfigError(where, key, fmt::format("expected a positive integer; got {}", it->dump()));
  }
  return it->get<std::int64_t>();
}

bool get_bool(const json& j, const char* key, bool fallback, const Location& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw ConfigError(where, key, fmt::format("expected true or false; got {}", it->dump()));
  return it->get<bool>();
}

}  // namespace

TransformerSpec read_hf_config(const std::filesystem::path& file, const Location& referenced_from) {
  std::ifstream in(file);
  if (!in) throw ConfigError(referenced_from, "model.hf_config", fmt::format("cannot read {}", file.string()));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const Location whole{file.string(), 0, 0};
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(offset_to_location(file.string(), text, e.byte > 0 ? e.byte - 1 : 0), "", fmt::format("invalid JSON: {}", e.what()));
  }
  if (!j.is_object()) throw ConfigError(whole, "", "expected a JSON object (a Hugging Face config.json)");
  const std::string type = j.value("model_type", std::string());

  TransformerSpec s;
  s.name = fmt::format("{} ({})", file.filename().string(), type);
  if (type == "llama" || type == "mistral" || type == "qwen2") {
    s.arch = Arch::llama;
    s.layers = get_int(j, "num_hidden_layers", whole, true);
    s.hidden = get_int(j, "hidden_size", whole, true);
    s.heads = get_int(j, "num_attention_heads", whole, true);
    s.kv_heads = get_int(j, "num_key_value_heads", whole, false, s.heads);
    s.head_dim = get_int(j, "head_dim", whole, false, s.hidden / s.heads);
    s.ffn_hidden = get_int(j, "intermediate_size", whole, true);
    s.vocab = get_int(j, "vocab_size", whole, true);
    s.tie_embeddings = get_bool(j, "tie_word_embeddings", false, whole);
  } else if (type == "gpt2") {
    s.arch = Arch::gpt;
    s.layers = get_int(j, "n_layer", whole, true);
    s.hidden = get_int(j, "n_embd", whole, true);
    s.heads = get_int(j, "n_head", whole, true);
    s.kv_heads = s.heads;
    s.head_dim = s.hidden / s.heads;
    s.ffn_hidden = get_int(j, "n_inner", whole, false, 4 * s.hidden);
    s.vocab = get_int(j, "vocab_size", whole, true);
    s.max_positions = get_int(j, "n_positions", whole, false, 1024);
    s.tie_embeddings = get_bool(j, "tie_word_embeddings", true, whole);
  } else {
    throw ConfigError(whole, "model_type", fmt::format("unsupported model_type \"{}\"; expected one of llama, mistral, qwen2, gpt2", type));
  }
  return s;
}

}  // namespace shardsim::model
