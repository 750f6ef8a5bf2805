// The step graph as JSON: what `shardsim export` writes and the replay harness reads.
// The schema is documented in docs/graph-format.md; "format_version" changes when it does.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/atomic_file.hpp"  // TextWriter
#include "graph/step_graph.hpp"

namespace shardsim::graph {

inline constexpr int kGraphFormatVersion = 1;

[[nodiscard]] nlohmann::json to_json(const StepGraph& g);
// The text of to_json(g).dump(1), handed to `write` piece by piece without the document in
// memory (shardsim export; a long pipelined step's graph is gigabytes as a document).
void write_json(const StepGraph& g, const TextWriter& write);

// Reads a graph written by to_json. Throws ConfigError naming `source` for malformed input.
// Every value is checked (types, ranges, op ids in order, edges within the graph and acyclic, at
// least one op): a ConfigError names `source` and the key path ("ops[3].unit").
[[nodiscard]] StepGraph from_json(const nlohmann::json& j, const std::string& source);

}  // namespace shardsim::graph
