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
  CHECK(eager.memory_bytes == doctest::Approx(79'296.0 * 512));
  // Compiled: norm 2ah = 2,048; rope 2a(q + d) = 4,096; the copy 2,048; residual add + norm
  // 4ah = 4,096; silu x mul 3af = 8,256; the last residual add 3,072: 23,616 per token.
  CHECK(compiled.memory_bytes == doctest::Approx(23'616.0 * 512));
  // Kernels: 7 matmuls + SDPA + 25 memory-bound (norms 7 each, rope 6) eager; 6 fused.
  CHECK(eager.launches == 33);
  CHECK(compiled.launches == 14);
  CHECK(compiled.flops == eager.flops);
}
