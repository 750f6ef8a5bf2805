// From a loaded scenario to its step graph: resolve the model, apply the wrap policy and the
// sharding strategy, build the graph. What `shardsim run`, `export`, `check` and the sweep do
// between loading the files and simulating; tests call it with scenarios written in code.
//
//   const graph::Prepared p = graph::prepare(config::load_scenario("scenarios/x.yaml"));
//   p.graph.size();  // ops of the step(s) to simulate
#pragma once

#include "config/scenario.hpp"
#include "core/deadline.hpp"
#include "fsdp/plan.hpp"
#include "graph/step_graph.hpp"
#include "model/float8.hpp"
#include "model/transformer.hpp"

namespace shardsim::graph {

struct Prepared {
  config::ScenarioConfig scenario;
  model::Model model;
  fsdp::Plan plan;                      // with pipeline stages, the first stage's
  std::vector<fsdp::Plan> stage_plans;  // with pipeline stages (parallelism.pp), each model stage's (pp x v)
  StepGraph graph;
  model::Float8Conversion float8;  // training.float8: what was converted
};

// Throws ConfigError for settings that cannot go together (e.g. CPU offload with gradient
// accumulation but without no_sync) and for model or wrap settings the layers below reject;
// RuntimeError past `deadline` (simulation.max_wall_time).
[[nodiscard]] Prepared prepare(config::ScenarioConfig scenario, const Deadline& deadline = {});

// The tensor-parallel degrees that keep a TP group inside a node (divisors of the node's GPUs)
// and that the scenario's model and sequence allow (prepare would accept them), ascending.
[[nodiscard]] std::vector<int> tensor_parallel_degrees(const config::ScenarioConfig& scenario);

// Pipeline-parallel degrees worth searching: 1, 2, 4, ... up to the model's layers, dividing the
// world size; only 1 where pipelining is refused (ZeRO-3, CPU offload).
[[nodiscard]] std::vector<int> pipeline_parallel_degrees(const config::ScenarioConfig& scenario);

// Context-parallel degrees worth searching: 1, 2, 4, ... up to a node's GPUs, dividing the world
// size, that split the sequence into 2 cp chunks; only 1 where CP is refused (not a llama model,
// ZeRO-3).
[[nodiscard]] std::vector<int> context_parallel_degrees(const config::ScenarioConfig& scenario);

// Pipeline schedules worth searching: GPipe, 1F1B, interleaved 1F1B, and without torch.compile
// the zero-bubble ones (torch refuses them for compiled stages).
[[nodiscard]] std::vector<std::string> pipeline_schedules(const config::ScenarioConfig& scenario);

}  // namespace shardsim::graph
