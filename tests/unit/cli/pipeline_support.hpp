// Shared by the pipeline tests: a nearly uniform model to pipeline, and its step graph.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "cli/pipeline.hpp"
#include "test_support.hpp"

namespace shardsim::test {

// Eight identical 4,096-wide blocks over 8 GPUs of one node, a vocabulary of 128 so that the
// first and last stages' extra work (embedding, output, loss) is small: nearly uniform stages. One
// data-parallel rank per stage at pp 8; bf16, 4,096-token sequences.
inline std::vector<std::string> uniform(int pp, int microbatches, const char* schedule) {
  return {"model.hidden=4096",
          "model.heads=32",
          "model.kv_heads=8",
          "model.ffn_hidden=14336",
          "model.vocab=128",
          "model.layers=8",
          "training.seq_len=4096",
          fmt::format("training.micro_batch={}", microbatches),
          "fsdp.version=2",
          fmt::format("parallelism.pp={}", pp),
          fmt::format("parallelism.pp_schedule={}", schedule)};
}

inline graph::Prepared prepare(const std::vector<std::string>& sets) {
  return cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", sets);
}

}  // namespace shardsim::test
