// One transformer block of the given architecture (see blocks.cpp for what each keeps).
#pragma once

#include <cstdint>

#include "model/module.hpp"
#include "model/transformer_spec.hpp"

namespace shardsim::model {

[[nodiscard]] Module build_block(const TransformerSpec& spec, std::int64_t index, int act_bytes);

}  // namespace shardsim::model
