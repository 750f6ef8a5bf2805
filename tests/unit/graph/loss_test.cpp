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
  double kept = 0;  // what the forward keeps for backward (loss memory it allocates and does not free at its end)
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
      if (m.category == graph::MemCategory::loss) w.kept += m.bytes;
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

TEST_CASE("the eager loss allocates the logits, their fp32 copy and the log-probabilities in turn, and its gradients apart") {
  // torchtitan: pred = model(x); loss = cross_entropy(pred.flatten(0, 1).float(), labels); del
  // pred; loss.backward(). On the tiny Llama (V = 1,000, 512 tokens): the bf16 logits 2V x 512 =
  // 1,024,000 B, their fp32 copy and the log-probabilities 4V x 512 = 2,048,000 B each; the copy
  // is dropped when cross_entropy returns and the logits at `del pred`, both below the kept
  // log-probabilities. Backward: nll's gradient and log-softmax's, 2,048,000 B each, one after
  // the other (the first fits where the copy and the logits were).
  constexpr double logits = 2.0 * 1000 * 512;
  constexpr double copy = 4.0 * 1000 * 512;
  const auto effects = [](const std::vector<std::string>& sets, const char* name) {
    const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
    std::vector<std::pair<double, bool>> out;
    for (const auto& m : test::first_ops_named(p, name).front()->memory) {
      if (m.category == graph::MemCategory::loss) out.emplace_back(m.bytes, m.at_end);
    }
    return out;
  };
  using E = std::vector<std::pair<double, bool>>;
  CHECK(effects({}, "FWD loss") == E{{logits, false}, {copy, false}, {copy, false}, {-copy, true}, {-logits, true}});
  CHECK(effects({}, "BWD loss") == E{{copy, false}, {copy, false}, {-copy, true}, {-copy, true}, {-copy, true}});
  // A loop that keeps the logits (training.keep_logits) frees none of them after the loss: they
  // are the output layer's, held from its forward.
  CHECK(effects({"training.keep_logits=true"}, "FWD loss") == E{{copy, false}, {copy, false}, {-copy, true}});
  // Without the upcast nothing is copied: log-softmax of the bf16 logits, 2V kept.
  CHECK(effects({"training.loss_upcast=false"}, "FWD loss") == E{{logits, false}, {logits, false}, {-logits, true}});
  // Compiled, the loss keeps the logits themselves (and a 4-byte logsumexp a token): nothing to free.
  CHECK(effects({"training.compile_loss=true"}, "FWD loss") == E{{logits + 4 * 512, false}});
  // Megatron's softmax is its fp32 copy, made in place; the logits go when the model's forward
  // returns the loss; backward, the bf16 gradient it casts back to, one tensor.
  CHECK(effects({"training.loss_impl=megatron"}, "FWD loss") == E{{logits, false}, {copy, false}, {-logits, true}});
  CHECK(effects({"training.loss_impl=megatron"}, "BWD loss") == E{{logits, false}, {-logits, true}, {-copy, true}});
}
