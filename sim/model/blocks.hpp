// One transformer block of the given architecture (see blocks.cpp for what each keeps), as one
// rank of a tensor-parallel group holds it (llama blocks only; tp.degree 1 for the others).
#pragma once

#include <cstdint>

#include "model/module.hpp"
#include "model/transformer_spec.hpp"

namespace shardsim::model {

[[nodiscard]] Module build_block(const TransformerSpec& spec, std::int64_t index, int act_bytes, const BlockOptions& options = {});

}  // namespace shardsim::model
