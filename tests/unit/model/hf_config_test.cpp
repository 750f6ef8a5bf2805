#include <doctest/doctest.h>

#include <algorithm>
#include <string_view>

#include "model/transformer.hpp"
#include "model/transformer_spec.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

// Whether a config.json read as `spec` builds the same blocks as the preset `name`.
void check_same_shape(const model::TransformerSpec& spec, std::string_view name) {
  const auto& all = model::presets();
  const auto p = std::find_if(all.begin(), all.end(), [&](const model::TransformerSpec& s) { return s.name == name; });
  REQUIRE(p != all.end());
  INFO("preset " << name);
  CHECK(spec.arch == p->arch);
  CHECK(spec.layers == p->layers);
  CHECK(spec.hidden == p->hidden);
  CHECK(spec.heads == p->heads);
  CHECK(spec.kv_heads == p->kv_heads);
  CHECK(spec.head_dim == p->head_dim);
  CHECK(spec.ffn_hidden == p->ffn_hidden);
  CHECK(spec.vocab == p->vocab);
  CHECK(spec.tie_embeddings == p->tie_embeddings);
  CHECK(spec.qkv_bias == p->qkv_bias);
  CHECK(spec.o_bias == p->o_bias);
  CHECK(spec.mlp_bias == p->mlp_bias);
  CHECK(spec.qk_norm == p->qk_norm);
  CHECK(spec.sliding_window == p->sliding_window);
}

}  // namespace

TEST_CASE("a Llama config.json gives the same model as the preset") {
  // Keys and values of meta-llama/Llama-3.1-8B's config.json.
  test::TempFile f("config.json", R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
  "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": false,
  "rope_theta": 500000.0, "torch_dtype": "bfloat16"
})");
  const auto spec = model::read_hf_config(f.path(), Location{"s.yaml", 4, 14});
  CHECK(model::build_model(spec, 8192, 2).total_params() == 8'030'261'248);
}

TEST_CASE("a Llama 3.2 config.json, its embedding tied to the output, gives the preset") {
  // Keys and values of meta-llama/Llama-3.2-1B's config.json (head_dim 64 = 2,048 / 32).
  test::TempFile f("config.json", R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false, "head_dim": 64,
  "hidden_size": 2048, "intermediate_size": 8192, "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32,
  "num_hidden_layers": 16, "num_key_value_heads": 8, "tie_word_embeddings": true, "vocab_size": 128256})");
  const auto spec = model::read_hf_config(f.path(), Location{});
  check_same_shape(spec, "llama3.2-1b");
  CHECK(model::build_model(spec, 8192, 2).total_params() == 1'235'814'400);
}

TEST_CASE("a GPT-2 config.json gives GPT-2's 124M parameters") {
  test::TempFile f("config.json", R"({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,
  "n_positions": 1024, "vocab_size": 50257, "n_inner": null})");
  const auto spec = model::read_hf_config(f.path(), Location{"s.yaml", 4, 14});
  CHECK(model::build_model(spec, 1024, 2).total_params() == 124'439'808);
}

TEST_CASE("unsupported or malformed configs are rejected with their location") {
  test::TempFile t5("config.json", R"({"model_type": "t5", "d_model": 1024})");
  CHECK_THROWS_WITH_AS(
      (void)model::read_hf_config(t5.path(), Location{}),
      (t5.str() + ":1:16: error: model_type: unsupported model_type \"t5\"; expected one of llama, mistral, qwen2, qwen3, gpt2").c_str(),
      ConfigError);
  test::TempFile broken("config.json", "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,,\n}");
  try {
    (void)model::read_hf_config(broken.path(), Location{});
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(e.where().line == 3);
  }
}

TEST_CASE("Qwen2, Qwen3 and Mistral configs give their published parameter counts") {
  // Qwen/Qwen3-8B's config.json. By hand: embedding and output 151,936 x 4,096 each
  // (1,244,659,712); a layer q 4096^2, k and v 4096 x 1024, o 4096^2, MLP 3 x 4096 x 12288,
  // two norms of 4,096 and q_norm, k_norm of head_dim 128 each: 192,946,432, x 36; the final norm
  // 4,096. 8,190,735,360, the model's safetensors total (16,381,470,720 bf16 bytes).
  test::TempFile qwen3("config.json", R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "head_dim": 128,
  "hidden_size": 4096, "intermediate_size": 12288, "max_window_layers": 36, "model_type": "qwen3",
  "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "sliding_window": null,
  "tie_word_embeddings": false, "use_sliding_window": false, "vocab_size": 151936})");
  const auto q3 = model::read_hf_config(qwen3.path(), Location{});
  CHECK(q3.qk_norm);
  CHECK(model::build_model(q3, 4096, 2).total_params() == 8'190'735'360);
  check_same_shape(q3, "qwen3-8b");
  // Qwen/Qwen2.5-7B: q, k and v with biases (3,584 + 2 x 512 a layer, 129,024 in all) on top of
  // 7,615,487,488 without them; 7,615,616,512, its safetensors total (15,231,233,024 bytes). Its
  // sliding_window key applies only with use_sliding_window, false here.
  test::TempFile qwen2("config.json", R"({"hidden_size": 3584, "intermediate_size": 18944, "max_window_layers": 28,
  "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
  "sliding_window": 131072, "tie_word_embeddings": false, "use_sliding_window": false, "vocab_size": 152064})");
  const auto q2 = model::read_hf_config(qwen2.path(), Location{});
  CHECK(q2.qkv_bias);
  CHECK(q2.sliding_window == 0);
  CHECK(model::build_model(q2, 4096, 2).total_params() == 7'615'616'512);
  check_same_shape(q2, "qwen2.5-7b");
  // mistralai/Mistral-7B-v0.1: 32,000 x 4,096 twice, 218,112,000 a layer x 32, the final norm:
  // 7,241,732,096; each query attends within a window of 4,096 tokens.
  test::TempFile mistral("config.json", R"({"hidden_size": 4096, "intermediate_size": 14336, "model_type": "mistral",
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "sliding_window": 4096,
  "tie_word_embeddings": false, "vocab_size": 32000})");
  const auto m = model::read_hf_config(mistral.path(), Location{});
  CHECK(m.sliding_window == 4096);
  CHECK(model::build_model(m, 4096, 2).total_params() == 7'241'732'096);
}

TEST_CASE("Llama's attention_bias and mlp_bias add a bias to each projection") {
  // hidden 64, 4 heads of 16, 2 K/V heads, MLP 128: biases of q 64, k 32, v 32, o 64 and of w1
  // 128, w3 128, w2 64, 512 a layer, 1,024 over 2 layers.
  const std::string shape = R"("model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
  "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100)";
  test::TempFile plain("config.json", "{" + shape + "}");
  test::TempFile biased("biased.json", "{" + shape + R"(, "attention_bias": true, "mlp_bias": true})");
  const auto without = model::build_model(model::read_hf_config(plain.path(), Location{}), 64, 2).total_params();
  const auto with = model::build_model(model::read_hf_config(biased.path(), Location{}), 64, 2).total_params();
  CHECK(with - without == 1024);
}

TEST_CASE("a Qwen sliding window, which only some layers have, is refused where the config asks for it") {
  test::TempFile f("config.json",
                   "{\"model_type\": \"qwen2\", \"hidden_size\": 64, \"intermediate_size\": 128,\n"
                   "\"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"vocab_size\": 100,\n"
                   "\"use_sliding_window\": true, \"max_window_layers\": 1}");
  try {
    (void)model::read_hf_config(f.path(), Location{});
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(e.where().line == 3);
    CHECK(e.where().column == 23);
    CHECK(std::string(e.what()).find("use_sliding_window: Qwen2's sliding window on the layers from max_window_layers on is not "
                                     "modelled; expected false") != std::string::npos);
  }
}
