// Builds the step graph from an FSDP plan, following PyTorch's issue order
// (shared/reference/fsdp-semantics.md): per unit an all-gather before use, forward and backward
// compute on the compute stream, a reduce-scatter after backward; prefetch, FSDP1's rate limiter
// and FSDP2's buffer-reuse waits as edges; memory effects on every op.
#pragma once

#include <functional>
#include <string_view>

#include "config/scenario.hpp"
#include "core/deadline.hpp"
#include "core/registry.hpp"
#include "fsdp/plan.hpp"
#include "graph/step_graph.hpp"
#include "model/transformer.hpp"

namespace shardsim::graph {

// Steps to simulate: simulation.steps, or 2 where the first step differs from the rest.
[[nodiscard]] int steps_to_simulate(const config::ScenarioConfig& scenario);

// One way of building a step: FSDP1, FSDP2, DeepSpeed ZeRO-3. Contract: build() returns the
// graph of `steps` training steps of `plan` in the framework's CPU issue order, with every op's
// memory effects; it reads nothing but its arguments.
struct StepBuilderInfo {
  std::string_view name;
  std::string_view description;
  std::function<StepGraph(const model::Model&, const fsdp::Plan&, const config::ScenarioConfig&, int steps, const Deadline&)> build;
};

class StepBuilderRegistry : public Registry<StepBuilderInfo> {
 public:
  StepBuilderRegistry() : Registry("step builder") {}
};

// fsdp1, fsdp2, zero3.
void register_builtin_step_builders(StepBuilderRegistry& registry);

// The builder a scenario asks for: zero3 for fsdp.sharding: zero3, else fsdp1 or fsdp2 by fsdp.version.
[[nodiscard]] std::string_view step_builder_name(const config::ScenarioConfig& scenario);

// Builds with the builder the scenario asks for; throws RuntimeError past `deadline`.
[[nodiscard]] StepGraph build_step_graph(const model::Model& model, const fsdp::Plan& plan, const config::ScenarioConfig& scenario,
                                         const Deadline& deadline = {});

}  // namespace shardsim::graph
