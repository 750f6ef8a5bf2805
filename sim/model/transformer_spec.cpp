#include "model/transformer_spec.hpp"

#include <fmt/format.h>

#include <array>

#include "core/reader.hpp"
#include "core/registry.hpp"

namespace shardsim::model {
namespace {

constexpr std::array<std::string_view, 4> kArchNames{"llama", "gpt", "torch_decoder", "seed_block"};

Arch parse_arch(const config::Located<std::string>& a) {
  for (std::size_t i = 0; i < kArchNames.size(); ++i) {
    if (kArchNames[i] == a.value) return static_cast<Arch>(i);
  }
  throw ConfigError(a.where, "model.arch", not_one_of_message(kArchNames, a.value));
}

const TransformerSpec& find_preset(const config::Located<std::string>& name) {
  std::vector<std::string_view> names;
  for (const auto& p : presets()) {
    if (p.name == name.value) return p;
    names.push_back(p.name);
  }
  throw ConfigError(name.where, "model.preset", unknown_name_message("model preset", name.value, names));
}

void check_shape(const TransformerSpec& s, const config::ModelConfig& m) {
  auto fail = [&](const auto& field, std::string_view key, const std::string& message) {
    throw ConfigError(field ? field->where : m.where, fmt::format("model.{}", key), message);
  };
  if (s.layers <= 0) fail(m.layers, "layers", "missing: give model.preset, model.hf_config or model.layers");
  if (s.hidden <= 0) fail(m.hidden, "hidden", "missing: give model.preset, model.hf_config or model.hidden");
  if (s.heads <= 0) fail(m.heads, "heads", "missing: give model.preset, model.hf_config or model.heads");
  if (s.ffn_hidden <= 0) fail(m.ffn_hidden, "ffn_hidden", "missing: give model.preset, model.hf_config or model.ffn_hidden");
  if (s.vocab <= 0) fail(m.vocab, "vocab", "missing: give model.preset, model.hf_config or model.vocab");
  if (s.head_dim * s.heads != s.hidden && s.arch != Arch::llama) {
    fail(m.heads, "heads", fmt::format("hidden {} is not divisible by heads {}", s.hidden, s.heads));
  }
  if (s.head_dim <= 0) fail(m.heads, "heads", fmt::format("hidden {} is not divisible by heads {}", s.hidden, s.heads));
  if (s.kv_heads <= 0 || s.heads % s.kv_heads != 0) {
    fail(m.kv_heads, "kv_heads", fmt::format("expected a divisor of heads ({}); got {}", s.heads, s.kv_heads));
  }
  // An upper bound of the parameter count (blocks have at most three MLP matrices), in double so
  // that it cannot overflow itself.
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double per_layer = 2 * d(s.hidden) * d(s.heads * s.head_dim) + 2 * d(s.hidden) * d(s.kv_heads * s.head_dim) +
                           3 * d(s.hidden) * d(s.ffn_hidden) + 8 * d(s.hidden) + d(s.ffn_hidden);
  const double params = d(s.layers) * per_layer + d(s.vocab) * d(s.hidden) * (s.tie_embeddings ? 1 : 2) + d(s.max_positions) * d(s.hidden);
  if (params > kMaxParams) {
    throw ConfigError(m.hf_config ? m.hf_config->where : m.where, "model",
                      fmt::format("{} layers x hidden {} x ffn_hidden {} with a vocabulary of {} is about {:.2g} parameters; "
                                  "expected at most {:.0g}",
                                  s.layers, s.hidden, s.ffn_hidden, s.vocab, params, kMaxParams));
  }
}

}  // namespace

std::string_view to_string(Arch a) {
  return kArchNames[static_cast<std::size_t>(a)];
}

TransformerSpec resolve_spec(const config::ModelConfig& m) {
  return resolve_spec(m, config::DiskFiles{});
}

TransformerSpec resolve_spec(const config::ModelConfig& m, const config::FileSource& source) {
  TransformerSpec s;
  if (m.preset) {
    s = find_preset(*m.preset);
  } else if (m.hf_config) {
    s = read_hf_config(m.hf_config->value, m.hf_config->where, source);
  } else {
    s.name = "custom";
  }
  const bool fields_given = m.layers || m.hidden || m.heads || m.kv_heads || m.ffn_hidden || m.vocab;
  if (m.arch) {
    s.arch = parse_arch(*m.arch);
  }
  if (m.layers) s.layers = m.layers->value;
  if (m.hidden) s.hidden = m.hidden->value;
  if (m.heads) s.heads = m.heads->value;
  if (m.kv_heads) s.kv_heads = m.kv_heads->value;
  if (m.ffn_hidden) s.ffn_hidden = m.ffn_hidden->value;
  if (m.vocab) s.vocab = m.vocab->value;
  if (m.max_positions) s.max_positions = m.max_positions->value;
  if (m.tie_embeddings) s.tie_embeddings = m.tie_embeddings->value;
  if (m.sliding_window) s.sliding_window = m.sliding_window->value;
  if (!m.kv_heads && (m.heads && !m.preset && !m.hf_config)) s.kv_heads = s.heads;
  if (s.kv_heads == 0) s.kv_heads = s.heads;
  if (s.arch == Arch::gpt && !m.preset && !m.hf_config) {
    if (!m.tie_embeddings) s.tie_embeddings = true;
    if (!m.ffn_hidden && s.hidden > 0) s.ffn_hidden = 4 * s.hidden;
  }
  // An explicit hidden or heads redefines the head size (a preset's own head_dim otherwise).
  if (s.heads > 0 && (m.hidden || m.heads || s.head_dim == 0)) s.head_dim = s.hidden / s.heads;
  if (s.arch == Arch::llama && s.heads > 0 && s.hidden % s.heads != 0 && (m.hidden || m.heads)) {
    throw ConfigError(m.heads ? m.heads->where : m.hidden->where, "model.heads",
                      fmt::format("hidden {} is not divisible by heads {}", s.hidden, s.heads));
  }
  if (s.sliding_window > 0 && s.arch != Arch::llama) {
    throw ConfigError(
        m.sliding_window ? m.sliding_window->where : m.where, "model.sliding_window",
        fmt::format("sliding-window attention is modelled for llama blocks; the model's are {}; expected 0", to_string(s.arch)));
  }
  if ((fields_given || m.sliding_window) && s.name != "custom") s.name += " (modified)";
  check_shape(s, m);
  return s;
}

}  // namespace shardsim::model
