#include "model/transformer.hpp"

#include <doctest/doctest.h>

#include "model/transformer_spec.hpp"

using namespace shardsim;

namespace {

model::Model preset(const std::string& name, std::int64_t seq = 2048) {
  for (const auto& p : model::presets()) {
    if (p.name == name) return model::build_model(p, seq, 2);
  }
  FAIL("no preset " << name);
  return {};
}

const model::Module& child(const model::Module& m, const std::string& name) {
  for (const auto& c : m.children) {
    if (c.name == name) return c;
  }
  FAIL("no child " << name);
  return m;
}

}  // namespace

TEST_CASE("parameter counts match the published model sizes") {
  // Hugging Face model cards / safetensors metadata.
  CHECK(preset("llama3.1-8b").total_params() == 8'030'261'248);
  CHECK(preset("llama2-7b").total_params() == 6'738'415'616);
  CHECK(preset("llama2-13b").total_params() == 13'015'864'320);
  CHECK(preset("llama2-70b").total_params() == 68'976'648'192);
  CHECK(preset("llama3.1-70b").total_params() == 70'553'706'496);
  CHECK(preset("llama3.1-405b").total_params() == 405'853'388'800);
  CHECK(preset("gpt2").total_params() == 124'439'808);
}

TEST_CASE("the Llama 3.2 and Qwen presets give their model cards' sizes, worked by hand") {
  // Llama 3.2 1B: embedding 128,256 x 2,048 (tied with the output) = 262,668,288; a block q, o
  // 2,048^2 each, k, v 2,048 x 512 each, MLP 3 x 2,048 x 8,192, two norms: 60,821,504; 16 blocks
  // and the final norm: 1,235,814,400 ("1.24B"). 3B: 394,002,432 + 28 x 100,669,440 + 3,072.
  CHECK(preset("llama3.2-1b").total_params() == 1'235'814'400);
  CHECK(preset("llama3.2-3b").total_params() == 3'212'749'824);
  // Qwen2.5 7B: embedding and output 2 x 152,064 x 3,584 = 1,089,994,752; a block q, o 3,584^2,
  // k, v 3,584 x 512, their biases 3,584 + 2 x 512, MLP 3 x 3,584 x 18,944, norms 7,168:
  // 233,057,792; 28 blocks and the final norm: 7,615,616,512 ("7.61B"). 72B: 2 x 152,064 x
  // 8,192 + 80 x 877,684,736 + 8,192 = 72,706,203,648 ("72.7B").
  CHECK(preset("qwen2.5-7b").total_params() == 7'615'616'512);
  CHECK(preset("qwen2.5-72b").total_params() == 72'706'203'648);
  // Qwen3 8B: 2 x 151,936 x 4,096 = 1,244,659,712; a block q, o 4,096 x 4,096, k, v 4,096 x
  // 1,024, q_norm and k_norm 128 each, MLP 3 x 4,096 x 12,288, norms 8,192: 192,946,432; 36 blocks
  // and the final norm: 8,190,735,360 ("8.2B"). Qwen3 32B's heads are 128 wide, not 5,120 / 64:
  // q and o 5,120 x 8,192, k, v 5,120 x 1,024, MLP 3 x 5,120 x 25,600, norms 10,240 + 256:
  // 487,598,336 a block; 2 x 151,936 x 5,120 + 64 blocks + 5,120 = 32,762,123,264 ("32.8B").
  CHECK(preset("qwen3-8b").total_params() == 8'190'735'360);
  CHECK(preset("qwen3-32b").block_params() == 487'598'336);
  CHECK(preset("qwen3-32b").total_params() == 32'762'123'264);
}

TEST_CASE("Llama 3.1 8B: per-layer and root group sizes of the D1 hand model") {
  const auto m = preset("llama3.1-8b");
  CHECK(m.block_params() == 218'112'000);
  CHECK(m.total_params() - 32 * m.block_params() == 1'050'677'248);  // embedding, final norm, output
}

TEST_CASE("the seed's LargeLM counts as by hand") {
  // Block: MultiheadAttention 4d^2 + 4d, FFN 2 d f + f + d, two LayerNorms 4d (d = 4096, f = 16384).
  const std::int64_t d = 4096;
  const std::int64_t f = 16384;
  const std::int64_t block = (4 * d * d + 4 * d) + (2 * d * f + f + d) + 4 * d;
  CHECK(block == 201'379'840);
  const auto m = preset("seed-large-lm");
  CHECK(m.block_params() == block);
  // Embedding 50000 d, 32 blocks, lm_head d x 50000 + bias.
  CHECK(m.total_params() == 50000 * d + 32 * block + (d * 50000 + 50000));
  CHECK(m.total_params() == 6'853'804'880);
}

TEST_CASE("the seed's SimpleTransformer counts as by hand") {
  // nn.TransformerDecoderLayer(1024, nhead=8): two MultiheadAttention (4d^2 + 4d each), linear1
  // and linear2 with the default dim_feedforward 2048, three LayerNorms.
  const std::int64_t d = 1024;
  const std::int64_t f = 2048;
  const std::int64_t layer = 2 * (4 * d * d + 4 * d) + (d * f + f) + (f * d + d) + 3 * 2 * d;
  CHECK(layer == 12'600'320);
  const auto m = preset("seed-simple-transformer");
  CHECK(m.block_params() == layer);
  CHECK(m.total_params() == 253'653'840);
}

TEST_CASE("MFU FLOPs per token follow 6N + 12 l h q s (torchtitan's count for D1)") {
  const auto m = preset("llama3.1-8b", 8192);
  const double n = 8'030'261'248.0 - 128256.0 * 4096.0;  // without the token embedding
  CHECK(m.mfu_flops_per_token() == doctest::Approx(6 * n + 12.0 * 32 * 32 * 128 * 8192).scale(0));
  CHECK(m.mfu_flops_per_token() == doctest::Approx(57.91e9).epsilon(1e-3).scale(0));
}

TEST_CASE("selective checkpointing keeps 994 MiB per Llama 3.1 8B layer at 16,384 tokens") {
  // d1-hand-model.md: x 128, wq 128, wv 32, attention out 128, logsumexp 2, w1 448, w2 128 MiB.
  const auto m = preset("llama3.1-8b", 8192);
  const auto& block = child(child(m.root, "layers"), "0");
  const double per_layer = block.activation.saved[static_cast<std::size_t>(model::AcMode::selective)] * 16384;
  CHECK(per_layer / (1 << 20) == doctest::Approx(128 + 128 + 32 + 128 + 2 + 448 + 128).scale(0));
  // Full checkpointing keeps only the block input.
  CHECK(block.activation.saved[static_cast<std::size_t>(model::AcMode::full)] == doctest::Approx(2.0 * 4096).scale(0));
}

TEST_CASE("torchtitan's op-level selective checkpointing recomputes wk, wo and w3") {
  const auto m = preset("llama3.1-8b");
  const auto& block = child(child(m.root, "layers"), "0");
  auto recomputed = [&](const std::string& mod, const std::string& lin) {
    return child(child(block, mod), lin).program.front().kernel.recomputed_by_selective;
  };
  CHECK_FALSE(recomputed("attention", "wq"));
  CHECK(recomputed("attention", "wk"));
  CHECK_FALSE(recomputed("attention", "wv"));
  CHECK(recomputed("attention", "wo"));
  CHECK_FALSE(recomputed("feed_forward", "w1"));
  CHECK(recomputed("feed_forward", "w3"));
  CHECK_FALSE(recomputed("feed_forward", "w2"));
}

TEST_CASE("explicit fields override a preset and are checked") {
  config::ModelConfig c;
  c.preset = config::Located<std::string>{"llama3.1-8b", {"s.yaml", 3, 11}};
  c.layers = config::Located<std::int64_t>{2, {"s.yaml", 4, 11}};
  const auto spec = model::resolve_spec(c);
  CHECK(spec.layers == 2);
  CHECK(spec.hidden == 4096);
  c.kv_heads = config::Located<std::int64_t>{5, {"s.yaml", 5, 13}};
  CHECK_THROWS_WITH_AS((void)model::resolve_spec(c), "s.yaml:5:13: error: model.kv_heads: expected a divisor of heads (32); got 5",
                       ConfigError);
  config::ModelConfig bad;
  bad.preset = config::Located<std::string>{"llama3-8b", {"s.yaml", 3, 11}};
  CHECK_THROWS_WITH_AS(
      (void)model::resolve_spec(bad),
      "s.yaml:3:11: error: model.preset: unknown model preset \"llama3-8b\"; expected one of llama2-7b, llama2-13b, llama2-70b, "
      "llama3.1-8b, llama3.1-70b, llama3.1-405b, llama3.2-1b, llama3.2-3b, qwen2.5-7b, qwen2.5-72b, qwen3-8b, qwen3-32b, gpt2, gpt3-175b, "
      "seed-simple-transformer, seed-large-lm (did you "
      "mean \"llama3.1-8b\"?)",
      ConfigError);
}

TEST_CASE("q and k norms keep their inputs without checkpointing, wq's and wk's outputs") {
  // Llama 3.1 8B's block with Qwen3's q_norm and k_norm: RMSNorm saves its input, here wq's
  // output (4,096 wide) and wk's (1,024), 2 x (4096 + 1024) = 10,240 bytes a token in bf16, which
  // nothing else kept; per-op SAC already keeps wq's output and recomputes wk's, full
  // checkpointing keeps the block input alone: both unchanged. Parameters: 2 x 128 a layer.
  model::TransformerSpec spec;
  for (const auto& p : model::presets()) {
    if (p.name == "llama3.1-8b") spec = p;
  }
  const auto plain = model::build_model(spec, 8192, 2);
  spec.qk_norm = true;
  const auto normed = model::build_model(spec, 8192, 2);
  const auto& a = child(child(plain.root, "layers"), "0").activation;
  const auto& b = child(child(normed.root, "layers"), "0").activation;
  CHECK(b.saved[0] - a.saved[0] == doctest::Approx(10'240.0).scale(0));
  CHECK(b.saved[1] == a.saved[1]);
  CHECK(b.saved[2] == a.saved[2]);
  CHECK(normed.total_params() - plain.total_params() == 32 * 256);
}
