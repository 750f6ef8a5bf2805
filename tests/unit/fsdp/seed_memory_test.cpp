// The seed's first two sketches (shared/reference/000_0727bdd932e8949f.txt), reproduced.
#include <doctest/doctest.h>

#include "fsdp/model_state.hpp"
#include "fsdp/plan.hpp"

using namespace shardsim;

TEST_CASE("seed calc_memory: DDP and FSDP model-state memory for 7B / 13B / 70B on 8 GPUs") {
  // calc_memory: params x (4 param + 4 grad + 8 Adam) bytes, divided by n_gpus for FSDP.
  // The seed prints DDP=112/208/1120 GB and FSDP=14/26/140 GB.
  struct Case {
    double billions, ddp_gb, fsdp_gb;
  };
  for (const Case c : {Case{7, 112, 14}, Case{13, 208, 26}, Case{70, 1120, 140}}) {
    const auto ddp = fsdp::model_state_bytes(c.billions * 1e9, 1, 4, config::Optimizer::adamw);
    const auto sharded = fsdp::model_state_bytes(c.billions * 1e9, 8, 4, config::Optimizer::adamw);
    CHECK(ddp.total() / 1e9 == doctest::Approx(c.ddp_gb).scale(0));
    CHECK(sharded.total() / 1e9 == doctest::Approx(c.fsdp_gb).scale(0));
  }
}

TEST_CASE("seed estimate_memory's bf16 case is pure-bf16 training: 2 + 2 + 4 bytes per parameter") {
  // estimate_memory(use_bf16=True): (params*2 + params*2 + params*4) / n_gpus.
  const auto bf16 = fsdp::model_state_bytes(70e9, 8, 2, config::Optimizer::adamw);
  CHECK(bf16.total() == doctest::Approx(70e9 * 8 / 8).scale(0));
  CHECK(bf16.params == doctest::Approx(70e9 * 2 / 8).scale(0));
  CHECK(bf16.optimizer == doctest::Approx(70e9 * 4 / 8).scale(0));
}

TEST_CASE("seed FlatParamShard: 600 parameters on 2 ranks, then 601") {
  // params of 100, 200 and 300 elements: 600 in all, 300 per rank, nothing padded.
  CHECK(fsdp::flat_padded_numel(600, 2) == 600);
  CHECK(fsdp::flat_padded_numel(600, 2) / 2 == 300);
  // One more element: 301 per rank, one element of padding (chunk pads to ceil(numel / W)).
  CHECK(fsdp::flat_padded_numel(601, 2) / 2 == 301);
  CHECK(fsdp::flat_padded_numel(601, 2) - 601 == 1);
  // Padding never reaches W.
  for (int w : {2, 3, 8, 64}) {
    for (std::int64_t n = 1; n < 200; ++n) {
      const auto padded = fsdp::flat_padded_numel(n, w);
      CHECK(padded % w == 0);
      CHECK(padded - n < w);
    }
  }
}

TEST_CASE("FSDP2 pads each parameter's dim 0 instead of the flat sum") {
  // A [5, 3] weight on 4 ranks: dim 0 padded to 8 rows of 3 -> 24 elements; a [6] bias -> 8.
  CHECK(fsdp::dim0_padded_numel({5, 3}, 4) == 24);
  CHECK(fsdp::dim0_padded_numel({6}, 4) == 8);
  // The flat parameter of the same two tensors (21 elements) pads only to 24.
  CHECK(fsdp::flat_padded_numel(21, 4) == 24);
}
