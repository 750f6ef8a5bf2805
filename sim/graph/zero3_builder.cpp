#include "graph/zero3_builder.hpp"

#include "core/error.hpp"

namespace shardsim::graph {

StepGraph build_zero3_graph(const model::Model&, const fsdp::Plan&, const config::ScenarioConfig&, int) {
  throw RuntimeError("zero3: under construction");
}

}  // namespace shardsim::graph
