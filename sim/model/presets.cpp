// Built-in model presets. Shapes are those of the published configs (the Hugging Face config.json
// of each Llama and Qwen model, the GPT-3 paper's table 2.1, and the seed's two PyTorch modules);
// the parameter counts they give are checked against the published totals in tests/unit/model.
// Mistral 7B is left to model.hf_config: v0.1 has a sliding window and a 32,000-token vocabulary,
// v0.3 neither, and a preset name would hide which.
#include "model/transformer_spec.hpp"

namespace shardsim::model {
namespace {

TransformerSpec llama(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads,
                      std::int64_t ffn, std::int64_t vocab) {
  TransformerSpec s;
  s.name = std::move(name);
  s.arch = Arch::llama;
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = hidden / heads;
  s.ffn_hidden = ffn;
  s.vocab = vocab;
  return s;
}

// The Llama family's variants, as the Hugging Face modeling code builds them from config.json.
TransformerSpec tied(TransformerSpec s) {  // tie_word_embeddings: true (Llama 3.2 1B and 3B)
  s.tie_embeddings = true;
  return s;
}

TransformerSpec qwen2(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads,
                      std::int64_t ffn, std::int64_t vocab) {
  TransformerSpec s = llama(std::move(name), layers, hidden, heads, kv_heads, ffn, vocab);
  s.qkv_bias = true;  // Qwen2Attention: q_proj, k_proj, v_proj with bias
  return s;
}

TransformerSpec qwen3(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads,
                      std::int64_t head_dim, std::int64_t ffn, std::int64_t vocab) {
  TransformerSpec s = llama(std::move(name), layers, hidden, heads, kv_heads, ffn, vocab);
  s.head_dim = head_dim;  // config.json's head_dim, not always hidden / heads (Qwen3 32B: 128, not 80)
  s.qk_norm = true;       // Qwen3Attention: q_norm, k_norm over each head before RoPE
  return s;
}

TransformerSpec gpt(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t vocab,
                    std::int64_t positions) {
  TransformerSpec s;
  s.name = std::move(name);
  s.arch = Arch::gpt;
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = heads;
  s.head_dim = hidden / heads;
  s.ffn_hidden = 4 * hidden;
  s.vocab = vocab;
  s.max_positions = positions;
  s.tie_embeddings = true;
  return s;
}

TransformerSpec seed(std::string name, Arch arch, std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t ffn) {
  TransformerSpec s;
  s.name = std::move(name);
  s.arch = arch;
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = heads;
  s.head_dim = hidden / heads;
  s.ffn_hidden = ffn;
  s.vocab = 50000;
  s.final_norm = false;  // the seed's models go straight from the last block to lm_head
  s.head_bias = true;    // nn.Linear(d_model, vocab_size) has a bias
  return s;
}

}  // namespace

const std::vector<TransformerSpec>& presets() {
  static const std::vector<TransformerSpec> all{
      llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000),
      llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000),
      llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000),
      llama("llama3.1-8b", 32, 4096, 32, 8, 14336, 128256),
      llama("llama3.1-70b", 80, 8192, 64, 8, 28672, 128256),
      llama("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256),
      tied(llama("llama3.2-1b", 16, 2048, 32, 8, 8192, 128256)),
      tied(llama("llama3.2-3b", 28, 3072, 24, 8, 8192, 128256)),
      qwen2("qwen2.5-7b", 28, 3584, 28, 4, 18944, 152064),
      qwen2("qwen2.5-72b", 80, 8192, 64, 8, 29568, 152064),
      qwen3("qwen3-8b", 36, 4096, 32, 8, 128, 12288, 151936),
      qwen3("qwen3-32b", 64, 5120, 64, 8, 128, 25600, 151936),
      gpt("gpt2", 12, 768, 12, 50257, 1024),
      gpt("gpt3-175b", 96, 12288, 96, 50257, 2048),
      // seed: SimpleTransformer(vocab_size=50000, d_model=1024, n_layers=12) with
      // nn.TransformerDecoderLayer(d_model, nhead=8): default dim_feedforward 2048.
      seed("seed-simple-transformer", Arch::torch_decoder, 12, 1024, 8, 2048),
      // seed: LargeLM(vocab_size=50000, d_model=4096, n_layers=32, nhead=32, dim_ff=16384).
      seed("seed-large-lm", Arch::seed_block, 32, 4096, 32, 16384),
  };
  return all;
}

}  // namespace shardsim::model
