// Builds the step graph from an FSDP plan, following PyTorch's issue order
// (shared/reference/fsdp-semantics.md): per unit an all-gather before use, forward and backward
// compute on the compute stream, a reduce-scatter after backward; prefetch, FSDP1's rate limiter
// and FSDP2's buffer-reuse waits as edges; memory effects on every op.
#pragma once

#include "config/scenario.hpp"
#include "fsdp/plan.hpp"
#include "graph/step_graph.hpp"
#include "model/transformer.hpp"

namespace shardsim::graph {

// Steps to simulate: simulation.steps, or 2 where the first step differs from the rest.
[[nodiscard]] int steps_to_simulate(const config::ScenarioConfig& scenario);

[[nodiscard]] StepGraph build_step_graph(const model::Model& model, const fsdp::Plan& plan, const config::ScenarioConfig& scenario);

}  // namespace shardsim::graph
