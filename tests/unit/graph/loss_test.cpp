// The loss after the blocks, worked by hand on the tiny Llama of tests/data (vocabulary V = 1,000,
// 512 tokens a micro-step, bf16 logits a = 2): its memory traffic forward and backward, what it
// keeps for backward and what its backward holds, as torch's F.cross_entropy (eager or compiled)
// and Megatron-LM's vocab-parallel cross-entropy run it (sim/model/transformer.cpp).
#include <doctest/doctest.h>

#include <map>

#include "fixtures/fixtures.hpp"

using namespace shardsim;

namespace {

struct LossWork {
  double forward_bytes = 0;
  double backward_bytes = 0;
  double kept = 0;  // what the forward keeps for backward (loss memory not freed at the op's end)
  double held = 0;  // what its backward holds beside that
  int forward_launches = 0;
  int backward_launches = 0;
  std::map<double, int> forward_all_reduces;  // bytes -> count, tensor-parallel
};

LossWork loss_work(const std::vector<std::string>& sets) {
  const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
  LossWork w;
  for (const graph::Op* op : test::first_ops_named(p, "FWD loss")) {
    w.forward_bytes += op->work.memory_bytes;
    w.forward_launches += op->work.launches;
    for (const auto& m : op->memory) {
      if (m.category == graph::MemCategory::loss && m.bytes > 0 && !m.at_end) w.kept += m.bytes;
    }
  }
  for (std::size_t i = 0; i < p.graph.size(); ++i) {  // the loss's tensor-parallel collectives ("TP AR loss ...")
    const graph::Op& op = p.graph.op(static_cast<int>(i));
    if (op.step == 0 && op.micro == 0 && op.kind == graph::OpKind::all_reduce && op.name.starts_with("TP AR loss "))
      ++w.forward_all_reduces[op.bytes];
  }
  for (const graph::Op* op : test::first_ops_named(p, "BWD loss")) {
    w.backward_bytes += op->work.memory_bytes;
    w.backward_launches += op->work.launches;
    for (const auto& m : op->memory) {
      if (m.category == graph::MemCategory::loss && m.bytes > 0 && !m.at_end) w.held += m.bytes;
    }
  }
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

TEST_CASE("Megatron-LM's cross-entropy: five in-place fp32 passes forward, the softmax turned into the gradient in place") {
  // megatron/core/tensor_parallel/cross_entropy.py on bf16 logits (a = 2) upcast to fp32 (e = 4),
  // per token: the cast (2 + 4)V, max 4V, subtract in place 8V, exp in place 8V, sum 4V, divide in
  // place 8V = 38V forward; backward grad_input.mul_ 8V and the cast back to bf16 (4 + 2)V = 14V.
  // It keeps the fp32 softmax (4V); its backward holds the bf16 gradient it casts to (2V).
  const LossWork megatron = loss_work({"training.loss_impl=megatron"});
  CHECK(megatron.forward_bytes == doctest::Approx(38.0 * 1000 * 512).scale(0));
  CHECK(megatron.backward_bytes == doctest::Approx(14.0 * 1000 * 512).scale(0));
  CHECK(megatron.kept == doctest::Approx(4.0 * 1000 * 512).scale(0));
  CHECK(megatron.held == doctest::Approx(2.0 * 1000 * 512).scale(0));
  CHECK(megatron.forward_launches == 9);
  CHECK(megatron.backward_launches == 18);
  // torch's, for the difference: 22V forward, 18V backward, its backward holding the one-hot
  // gradient and the result in fp32 (2 x 4V).
  const LossWork torch_loss = loss_work({});
  CHECK(torch_loss.held == doctest::Approx(8.0 * 1000 * 512).scale(0));
  // Without the upcast (Megatron's fp16_lm_cross_entropy) the passes run on the bf16 logits:
  // 8 x 2V forward, 2 x 2V backward, nothing to cast back, the bf16 softmax kept.
  const LossWork half = loss_work({"training.loss_impl=megatron", "training.loss_upcast=false"});
  CHECK(half.forward_bytes == doctest::Approx(16.0 * 1000 * 512).scale(0));
  CHECK(half.backward_bytes == doctest::Approx(4.0 * 1000 * 512).scale(0));
  CHECK(half.kept == doctest::Approx(2.0 * 1000 * 512).scale(0));
  CHECK(half.held == doctest::Approx(0.0).scale(1));
}

TEST_CASE("Megatron-LM's cross-entropy under tensor parallelism: the rank's vocabulary shard, three fp32 all-reduces a token") {
  // TP 2: 500 of the 1,000 rows a rank, 38 x 500 bytes a token forward; the max, the target's
  // logit and the sum of exponentials all-reduced, 3 x 4 bytes a token, where torchtitan's
  // loss_parallel reduces two (8 bytes).
  const LossWork megatron = loss_work({"training.loss_impl=megatron", "parallelism.tp=2"});
  CHECK(megatron.forward_bytes == doctest::Approx(38.0 * 500 * 512).scale(0));
  CHECK(megatron.forward_all_reduces == std::map<double, int>{{12.0 * 512, 1}});
  const LossWork torch_loss = loss_work({"parallelism.tp=2"});
  CHECK(torch_loss.forward_all_reduces == std::map<double, int>{{8.0 * 512, 1}});
}
