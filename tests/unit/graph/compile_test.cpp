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

namespace {

struct LossWork {
  double forward_bytes = 0;
  double backward_bytes = 0;
  double kept = 0;  // what the forward keeps for backward (loss memory not freed at the op's end)
};

LossWork loss_work(const std::vector<std::string>& sets) {
  const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
  LossWork w;
  for (const graph::Op* op : test::first_ops_named(p, "FWD loss")) {
    w.forward_bytes += op->work.memory_bytes;
    for (const auto& m : op->memory) {
      if (m.category == graph::MemCategory::loss && m.bytes > 0 && !m.at_end) w.kept += m.bytes;
    }
  }
  for (const graph::Op* op : test::first_ops_named(p, "BWD loss")) w.backward_bytes += op->work.memory_bytes;
  return w;
}

}  // namespace

TEST_CASE("a compiled loss reads the bf16 logits instead of writing fp32 copies, and keeps them instead of the log-softmax") {
  // Tiny Llama: vocabulary V = 1,000, 512 tokens, bf16 logits (a = 2).
  const LossWork eager = loss_work({});
  const LossWork compiled = loss_work({"training.compile_loss=true"});
  // Eager (cross_entropy(logits.float())): upcast (a + 4)V, three fp32 log-softmax passes 12V,
  // nll 4V = 22V forward; backward 4.5 x 4V = 18V; keeps the fp32 log-softmax output, 4V.
  CHECK(eager.forward_bytes == doctest::Approx(22.0 * 1000 * 512).scale(0));
  CHECK(eager.backward_bytes == doctest::Approx(18.0 * 1000 * 512).scale(0));
  CHECK(eager.kept == doctest::Approx(4.0 * 1000 * 512).scale(0));
  // Compiled: the logits read twice forward (2aV = 4V), read and their gradient written backward
  // (2aV); keeps the bf16 logits and a 4-byte logsumexp per token.
  CHECK(compiled.forward_bytes == doctest::Approx(4.0 * 1000 * 512).scale(0));
  CHECK(compiled.backward_bytes == doctest::Approx(4.0 * 1000 * 512).scale(0));
  CHECK(compiled.kept == doctest::Approx((2.0 * 1000 + 4) * 512).scale(0));
}
