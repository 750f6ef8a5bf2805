// Unfused attention and dropout (training.attention: unfused, training.dropout; model/attention_impl.hpp),
// worked by hand on the tiny model of tests/data as a GPT (hidden h = 512, 8 heads of d = 64,
// bf16 a = 2), micro-batch b = 2 sequences of s = 512 tokens: E = b x heads x s^2 = 4,194,304
// score elements per block, 1,024 tokens.
#include <doctest/doctest.h>

#include "fixtures/fixtures.hpp"
#include "model/transformer.hpp"

using namespace shardsim;

namespace {

struct BlockWork {
  double memory_bytes = 0;
  int launches = 0;
  double gemm_flops = 0;
  double attention_flops = 0;
  double saved_none = 0;  // the block's activation bytes per token without checkpointing
};

BlockWork block(const std::string& op_name, std::vector<std::string> sets) {
  for (const char* s : {"model.arch=gpt", "model.max_positions=512", "training.micro_batch=2"}) sets.emplace_back(s);
  const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
  BlockWork w;
  for (const graph::Op* op : test::first_ops_named(p, op_name)) {
    w.memory_bytes += op->work.memory_bytes;
    w.launches += op->work.launches;
    w.gemm_flops += op->work.gemm_flops();
    w.attention_flops += op->work.attention_flops(false) + op->work.attention_flops(true);
  }
  model::for_each_module(p.model.root, "", [&](const model::Module& m, const std::string&) {
    if (m.is_block && w.saved_none == 0) w.saved_none = m.activation.saved[0];
  });
  return w;
}

constexpr double kScores = 2.0 * 8 * 512 * 512;  // E
constexpr double kTokens = 1024;

}  // namespace

TEST_CASE("unfused attention: two batched GEMMs over all of s x s and the softmax's bytes, forward and backward") {
  const BlockWork flash = block("FWD h.1", {});
  const BlockWork unfused = block("FWD h.1", {"training.attention=unfused"});
  // Flash: one causal kernel of 4 b heads s^2 d / 2 = 5.37e8 FLOPs, no GEMM of its own.
  CHECK(flash.attention_flops == doctest::Approx(4.0 * 2 * 8 * 512 * 512 * 64 / 2).scale(0));
  CHECK(unfused.attention_flops == 0);
  // Unfused: QK^T and PV, 2 b heads s^2 d each, the masked half computed too: 1.074e9 more GEMM FLOPs.
  CHECK(unfused.gemm_flops - flash.gemm_flops == doctest::Approx(2 * 2.0 * 2 * 8 * 512 * 512 * 64).scale(0));
  // Softmax reads and writes the scores: 2a E = 16,777,216 bytes; 3 launches for 1.
  CHECK(unfused.memory_bytes - flash.memory_bytes == doctest::Approx(2 * 2 * kScores).scale(0));
  CHECK(unfused.launches - flash.launches == 2);

  // Backward (no checkpointing): four GEMMs, twice the forward's FLOPs, and the softmax backward
  // 3a E; flash's backward kernel (2.5 x its forward FLOPs) goes.
  const BlockWork flash_bwd = block("BWD h.1", {});
  const BlockWork unfused_bwd = block("BWD h.1", {"training.attention=unfused"});
  CHECK(flash_bwd.attention_flops == doctest::Approx(2.5 * 4.0 * 2 * 8 * 512 * 512 * 64 / 2).scale(0));
  CHECK(unfused_bwd.gemm_flops - flash_bwd.gemm_flops == doctest::Approx(4 * 2.0 * 2 * 8 * 512 * 512 * 64).scale(0));
  CHECK(unfused_bwd.memory_bytes - flash_bwd.memory_bytes == doctest::Approx(3 * 2 * kScores).scale(0));
}

TEST_CASE("dropout 0.1 with unfused attention: masks on the probabilities and on both residual branches") {
  const BlockWork plain = block("FWD h.1", {"training.attention=unfused"});
  const BlockWork dropped = block("FWD h.1", {"training.attention=unfused", "training.dropout=0.1"});
  // On the probabilities: read, write and a 1-byte mask, (2a + 1) E; on the two residual adds a
  // 1-byte mask per element of h: 2 h per token.
  CHECK(dropped.memory_bytes - plain.memory_bytes == doctest::Approx(5 * kScores + 2 * 512 * kTokens).scale(0));
  const BlockWork plain_bwd = block("BWD h.1", {"training.attention=unfused"});
  const BlockWork dropped_bwd = block("BWD h.1", {"training.attention=unfused", "training.dropout=0.1"});
  // Backward: the probabilities' dropout (2a + 1) E, the residual adds 2 x their forward's extra 2 h.
  CHECK(dropped_bwd.memory_bytes - plain_bwd.memory_bytes == doctest::Approx(5 * kScores + 2 * 2 * 512 * kTokens).scale(0));
}

TEST_CASE("hidden dropout alone runs with a flash kernel: the residual branches' masks, nothing on the probabilities") {
  // training.attention_dropout: 0 keeps the probabilities whole, so the flash kernel runs as it is
  // (Megatron-Core's runs with hidden dropout and fused attention); the two residual adds write a
  // 1-byte mask per element of h, 2 h a token forward, twice that backward, and keep the masks.
  const BlockWork plain = block("FWD h.1", {});
  const BlockWork hidden = block("FWD h.1", {"training.dropout=0.1", "training.attention_dropout=0"});
  CHECK(hidden.memory_bytes - plain.memory_bytes == doctest::Approx(2 * 512 * kTokens).scale(0));
  CHECK(hidden.attention_flops == doctest::Approx(plain.attention_flops).scale(0));
  CHECK(hidden.saved_none - plain.saved_none == doctest::Approx(2.0 * 512).scale(0));
  const BlockWork plain_bwd = block("BWD h.1", {});
  const BlockWork hidden_bwd = block("BWD h.1", {"training.dropout=0.1", "training.attention_dropout=0"});
  CHECK(hidden_bwd.memory_bytes - plain_bwd.memory_bytes == doctest::Approx(2 * 2 * 512 * kTokens).scale(0));
  // Unfused, attention_dropout alone drops the probabilities: (2a + 1) E, no residual masks.
  const BlockWork unfused = block("FWD h.1", {"training.attention=unfused"});
  const BlockWork probs = block("FWD h.1", {"training.attention=unfused", "training.attention_dropout=0.1"});
  CHECK(probs.memory_bytes - unfused.memory_bytes == doctest::Approx(5 * kScores).scale(0));
}

TEST_CASE("unfused attention keeps its probabilities for backward, per token heads x s x bytes") {
  const BlockWork flash = block("FWD h.1", {});
  const BlockWork unfused = block("FWD h.1", {"training.attention=unfused"});
  const BlockWork dropped = block("FWD h.1", {"training.attention=unfused", "training.dropout=0.1"});
  // Probabilities 8 x 512 x 2 = 8,192 bytes per token, less flash's logsumexp (4 x 8 = 32).
  CHECK(unfused.saved_none - flash.saved_none == doctest::Approx(8.0 * 512 * 2 - 32).scale(0));
  // With dropout also the dropped probabilities and the mask, 8 x 512 x (2 + 1), and the two
  // residual masks, 2 h: 8,192 + 12,288 + 1,024 - 32 = 21,472.
  CHECK(dropped.saved_none - flash.saved_none == doctest::Approx(8.0 * 512 * 5 + 2 * 512 - 32).scale(0));
}
