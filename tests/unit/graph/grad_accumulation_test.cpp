// Gradients DDP, Megatron's distributed optimizer and FSDP2 keep over the micro-steps of a step,
// added up as each backward makes them (sim/graph/fsdp_reduction.cpp, accumulate_kept_grads), worked by
// hand on the tiny Llama of tests/data: 4 blocks of 4 x 512^2 + 3 x 512 x 1,376 + 2 x 512 =
// 3,163,136 parameters, the root's embedding and output (2 x 1,000 x 512) and final norm (512),
// 13,677,056 in all; bf16 compute (g = 2), fp32 master and reduce dtypes (4). Of them the linears'
// weights, what the weight-gradient GEMMs produce: 4 x (4 x 512^2 + 3 x 512 x 1,376) + 1,000 x 512
// (the output head) = 13,160,448; the rest, 516,608 in 10 tensors (the embedding, 8 block norms,
// the final norm), get theirs from other kernels. 39 tensors in all (9 a block, 3 in the root).
#include <doctest/doctest.h>

#include "fixtures/fixtures.hpp"

using namespace shardsim;

namespace {

constexpr double kParams = 4 * 3'163'136.0 + 2 * 1'000 * 512 + 512;
constexpr double kGemmWeights = 4 * (4 * 512.0 * 512 + 3 * 512 * 1'376) + 1'000 * 512;
constexpr double kHooked = 1'000 * 512 + 4 * 2 * 512 + 512;
static_assert(kGemmWeights + kHooked == kParams);

struct Accumulation {
  double bytes = 0;  // the "grad accumulate" ops' HBM traffic in step 0, every micro-step
  int ops = 0;
  int launches = 0;
  double zeroed = 0;  // the "zero grad buffer" op's
  double casts = 0;   // "cast" ops: no_shard's parameters cast for compute per unit
};

Accumulation accumulation(const std::vector<std::string>& sets) {
  const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
  Accumulation a;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const graph::Op& op = p.graph.op(static_cast<int>(i));
    if (op.step != 0) continue;
    if (op.name.starts_with("grad accumulate ")) {
      a.bytes += op.work.memory_bytes;
      a.launches += op.work.launches;
      ++a.ops;
    }
    if (op.name.starts_with("cast ")) ++a.casts;
    if (op.name.starts_with("zero grad buffer ")) a.zeroed += op.work.memory_bytes;
  }
  return a;
}

}  // namespace

TEST_CASE("DDP adds each later micro-step's gradients to the kept ones: read both, write one, in the master dtype") {
  // AccumulateGrad keeps the first micro-step's gradient as it is and adds the second's and the
  // third's in place: 2 x 3 x 4 bytes a parameter, one op per unit with parameters (4 blocks and
  // the root) and micro-step.
  const Accumulation three = accumulation({"fsdp.sharding=no_shard", "training.grad_accum=3"});
  CHECK(three.bytes == doctest::Approx(2 * 3 * 4 * kParams).scale(0));
  CHECK(three.ops == 2 * 5);
  CHECK(three.zeroed == doctest::Approx(0.0).scale(1));  // zero_grad(set_to_none=True): nothing to clear
  // One micro-step a step: nothing to add.
  CHECK(accumulation({"fsdp.sharding=no_shard"}).ops == 0);
}

TEST_CASE("Megatron's distributed optimizer adds every micro-step's gradients to its fp32 buffer and zeroes it each step") {
  // gradient_accumulation_fusion: the weight-gradient GEMMs read and write the fp32 buffer (2 x 4
  // bytes an element) instead of writing the bf16 gradient (2), 6 bytes more, exposed as the H100's
  // GEMM output write is (gpu.gemm_output_exposed 0.45); the other parameters' gradients are added
  // by their hooks (read 4 + 2, write 4: 10 bytes, a kernel each of the 10 tensors); on each of the
  // 3 micro-steps, the first too. The buffer's memset after the optimizer step writes 4 bytes a
  // parameter.
  const Accumulation three = accumulation({"fsdp.version=2", "fsdp.sharding=shard_optimizer", "training.grad_accum=3"});
  CHECK(three.bytes == doctest::Approx(3 * (6 * 0.45 * kGemmWeights + 10 * kHooked)).scale(0));
  CHECK(three.ops == 3 * 5);
  CHECK(three.launches == 3 * 10);
  CHECK(three.zeroed == doctest::Approx(4 * kParams).scale(0));
  // Reduced in bf16, the buffer is bf16: one read of it more in the GEMMs (2 x 2 - 2 bytes), the
  // hooks' 2 + 2 + 2.
  const Accumulation bf16 =
      accumulation({"fsdp.version=2", "fsdp.sharding=shard_optimizer", "training.grad_accum=3", "fsdp.mixed_precision.reduce=bf16"});
  CHECK(bf16.bytes == doctest::Approx(3 * (2 * 0.45 * kGemmWeights + 6 * kHooked)).scale(0));
  CHECK(bf16.zeroed == doctest::Approx(2 * kParams).scale(0));
}

TEST_CASE("Without gradient accumulation fusion every gradient goes through its hook into Megatron's buffer") {
  // Megatron-LM before 2022: main_grad.add_(grad) for every parameter, 4 + 2 + 4 bytes each and a
  // kernel each of the 39 tensors, on each of the 3 micro-steps.
  const Accumulation hooks =
      accumulation({"fsdp.version=2", "fsdp.sharding=shard_optimizer", "training.grad_accum=3", "fsdp.grad_accumulation_fusion=false"});
  CHECK(hooks.bytes == doctest::Approx(3 * 10 * kParams).scale(0));
  CHECK(hooks.launches == 3 * 39);
}

TEST_CASE("Megatron-LM's DDP keeps a gradient buffer in the reduce dtype and no fp32 parameters to cast") {
  // fsdp.ddp_impl: megatron with bf16 reduction (Megatron-LM 2021's local DDP: the fp16 buffer),
  // hooks only: 3 x (2 + 2 + 2) bytes a parameter, the buffer zeroed (2 bytes a parameter); the
  // model's parameters are bf16 already, so no unit is cast for compute, where PyTorch DDP casts
  // each of its 5 units' fp32 parameters once a micro-step (forward; backward keeps them).
  const std::vector<std::string> megatron{"fsdp.version=2",         "fsdp.sharding=no_shard",
                                          "fsdp.ddp_impl=megatron", "fsdp.mixed_precision.reduce=bf16",
                                          "training.grad_accum=3",  "fsdp.grad_accumulation_fusion=false"};
  const Accumulation m = accumulation(megatron);
  CHECK(m.bytes == doctest::Approx(3 * 6 * kParams).scale(0));
  CHECK(m.ops == 3 * 5);
  CHECK(m.zeroed == doctest::Approx(2 * kParams).scale(0));
  CHECK(m.casts == doctest::Approx(0.0).scale(1));
  const Accumulation torch =
      accumulation({"fsdp.version=2", "fsdp.sharding=no_shard", "fsdp.mixed_precision.reduce=bf16", "training.grad_accum=3"});
  CHECK(torch.casts > 0);
  CHECK(torch.zeroed == doctest::Approx(0.0).scale(1));
}

TEST_CASE("FSDP2 under no_sync adds each later micro-step's unsharded gradients in place where it reduces in their dtype") {
  // Reduced in bf16, the unsharded gradients stay bf16 and autograd adds the second and third
  // micro-steps' to the first's: 2 x 3 x 2 bytes a parameter (unpadded), one op per unit and
  // micro-step; nothing zeroed.
  const Accumulation bf16 =
      accumulation({"fsdp.version=2", "fsdp.mixed_precision.reduce=bf16", "training.grad_accum=3", "training.no_sync=true"});
  CHECK(bf16.bytes == doctest::Approx(2 * 3 * 2 * kParams).scale(0));
  CHECK(bf16.ops == 2 * 5);
  CHECK(bf16.zeroed == doctest::Approx(0.0).scale(1));
  // Reducing every micro-step, nothing is kept to add to.
  CHECK(accumulation({"fsdp.version=2", "fsdp.mixed_precision.reduce=bf16", "training.grad_accum=3"}).ops == 0);
}
