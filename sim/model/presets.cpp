// Built-in model presets. Shapes are those of the published configs (Hugging Face config.json
// of each model, the GPT-3 paper's table 2.1, and the seed's two PyTorch modules); the parameter
// counts they give are checked against the published totals in tests/unit/model.
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
