// torch.compile per block (training.compile), worked by hand on the tiny Llama of tests/data
// (hidden h = 512, q = d = 512 (no GQA), MLP f = 1376, bf16 a = 2, 512 tokens per micro-step):
// the memory-bound kernels of a block's forward, bytes per token (sim/model/blocks.cpp).
#include <doctest/doctest.h>

#include "fixtures/fixtures.hpp"

using namespace shardsim;

namespace {

struct BlockWork {
  double memory_bytes = 0;
  int launches = 0;
  double flops = 0;
};

BlockWork block_forward(const std::vector<std::string>& sets) {
  const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
  BlockWork w;
  for (const graph::Op* op : test::first_ops_named(p, "FWD layers.1")) {
    w.memory_bytes += op->work.memory_bytes;
    w.launches += op->work.launches;
    w.flops += op->work.gemm_flops() + op->work.attention_flops(false);
  }
  return w;
}

}  // namespace

TEST_CASE("torch.compile fuses a block's memory-bound kernels and leaves its matmuls and attention alone") {
  const BlockWork eager = block_forward({});
  const BlockWork compiled = block_forward({"training.compile=true"});
  // Eager: norm 28h + 4ah = 18,432 (x2); rope (2a + 16)(q + d) = 20,480; attention output copy
  // 2aq = 2,048; residual adds 3ah = 3,072 (x2); silu 2af = 5,504; mul 3af = 8,256: 79,296 per token.
  CHECK(eager.memory_bytes == doctest::Approx(79'296.0 * 512).scale(0));
  // Compiled: norm 2ah = 2,048; rope 2a(q + d) = 4,096; the copy 2,048; residual add + norm
  // 4ah = 4,096; silu x mul 3af = 8,256; the last residual add 3,072: 23,616 per token.
  CHECK(compiled.memory_bytes == doctest::Approx(23'616.0 * 512).scale(0));
  // Kernels: 7 matmuls + SDPA + 25 memory-bound (norms 7 each, rope 6) eager; 6 fused.
  CHECK(eager.launches == 33);
  CHECK(compiled.launches == 14);
  CHECK(compiled.flops == eager.flops);
}

TEST_CASE("Qwen3's q and k norms: seven eager kernels each over q or k, folded into RoPE when compiled") {
  // The tiny Llama's shape as a Qwen3 config (q_norm and k_norm over each head of 64): eager,
  // each norm moves (28 + 4a) x 64 bytes per head, 8 heads of q and 8 of k: 2 x 18,432 = 36,864
  // bytes per token on top of 79,296, and 14 more kernels; compiled, Inductor folds them into the
  // kernel that rotates q and k, which reads and writes them once anyway: nothing added.
  test::TempFile config("qwen3.json", R"({"model_type": "qwen3", "hidden_size": 512, "intermediate_size": 1376,
  "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 64, "num_hidden_layers": 4, "vocab_size": 1000})");
  const std::string qwen3 = "model.hf_config=" + config.str();
  const BlockWork eager = block_forward({qwen3});
  const BlockWork compiled = block_forward({qwen3, "training.compile=true"});
  CHECK(eager.memory_bytes == doctest::Approx((79'296.0 + 36'864) * 512).scale(0));
  CHECK(eager.launches == 33 + 14);
  CHECK(compiled.memory_bytes == doctest::Approx(23'616.0 * 512).scale(0));
  CHECK(compiled.launches == 14);
}
