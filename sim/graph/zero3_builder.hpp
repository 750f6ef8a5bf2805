// DeepSpeed ZeRO stage 3 as a step graph (shared/reference/fsdp-semantics.md section 8).
#pragma once

#include "config/scenario.hpp"
#include "core/deadline.hpp"
#include "fsdp/plan.hpp"
#include "graph/step_graph.hpp"
#include "model/transformer.hpp"

namespace shardsim::graph {

[[nodiscard]] StepGraph build_zero3_graph(const model::Model& model, const fsdp::Plan& plan, const config::ScenarioConfig& scenario,
                                          int steps, const Deadline& deadline);

}  // namespace shardsim::graph
