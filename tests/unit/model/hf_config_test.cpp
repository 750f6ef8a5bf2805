#include <doctest/doctest.h>

#include "model/transformer.hpp"
#include "model/transformer_spec.hpp"
#include "test_support.hpp"

using namespace shardsim;

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
      (t5.str() + ":1:16: error: model_type: unsupported model_type \"t5\"; expected one of llama, mistral, qwen2, gpt2").c_str(), ConfigError);
  test::TempFile broken("config.json", "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,,\n}");
  try {
    (void)model::read_hf_config(broken.path(), Location{});
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(e.where().line == 3);
  }
}
