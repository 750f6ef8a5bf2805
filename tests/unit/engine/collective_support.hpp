// Helpers for the tests that run collectives alone on a shipped topology: load it with a few
// overrides, build the scenario's collectives (auto or forced), simulate a graph of collectives,
// and turn a time into nccl-tests' bus bandwidth.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/topology.hpp"
#include "core/units.hpp"
#include "engine/collectives/collectives.hpp"
#include "engine/compute_model.hpp"
#include "engine/simulator.hpp"
#include "graph/step_graph.hpp"
#include "test_support.hpp"

namespace shardsim::test {

// topologies/`file` with dotted overrides, e.g. {{"node.nvls", "false"}}.
inline config::TopologyConfig topology(const std::string& file, const std::vector<std::pair<std::string, std::string>>& overrides = {}) {
  ConfigNode o = ConfigNode::make_map(Location{"<test>", 0, 0});
  for (const auto& [k, v] : overrides) o.set(k, ConfigNode::make_scalar(v, Location{"<test>", 0, 0}), Location{"<test>", 0, 0});
  return config::load_topology(source_dir() / "topologies" / file, o, "cluster.overrides");
}

// collectives: {algorithm: A, protocol: P} for every kind of collective.
inline config::CollectivesConfig collectives_settings(const std::string& algorithm = "auto", const std::string& protocol = "auto") {
  config::CollectivesConfig c;
  c.all_gather = config::Choice{algorithm, "collectives.algorithm", Location{"<test>", 0, 0}, ConfigNode{}};
  c.reduce_scatter = c.all_reduce = c.all_gather;
  c.protocol = config::Choice{protocol, "collectives.protocol", Location{"<test>", 0, 0}, ConfigNode{}};
  return c;
}

inline engine::collectives::Collectives collectives(const config::TopologyConfig& topo,
                                                    const config::CollectivesConfig& settings = collectives_settings()) {
  engine::collectives::AlgorithmRegistry algorithms;
  engine::collectives::register_builtin_algorithms(algorithms);
  return engine::collectives::Collectives(settings, engine::cluster_view(topo), std::move(algorithms));
}

inline graph::Op collective_op(graph::OpKind kind, double bytes, graph::Group group = graph::Group::shard) {
  graph::Op op;
  op.kind = kind;
  op.stream = kind == graph::OpKind::all_gather       ? graph::Stream::all_gather
              : kind == graph::OpKind::reduce_scatter ? graph::Stream::reduce_scatter
                                                      : graph::Stream::all_reduce;
  op.name = std::string(graph::to_string(kind));
  op.group = group;
  op.bytes = bytes;
  return op;
}

// A graph of independent collectives over `world` ranks whose shard group is `shard_group`.
inline graph::StepGraph collectives_graph(int world, int shard_group, const std::vector<graph::Op>& ops) {
  graph::StepGraph g;
  g.info.world_size = world;
  g.info.shard_group = shard_group;
  g.info.replicate_group = world / shard_group;
  for (const auto& op : ops) g.add_op(op);
  return g;
}

inline engine::SimulationResult simulate(const graph::StepGraph& g, const config::TopologyConfig& topo, int nodes,
                                         const engine::CollectiveAlgorithm& algorithm,
                                         engine::FlowGranularity flows = engine::FlowGranularity::path,
                                         config::SimulationMode mode = config::SimulationMode::full) {
  const engine::RooflineModel compute(topo, true);
  return engine::simulate(engine::SimulationInput{g, topo, nodes, compute, algorithm, flows, mode});
}

// Ranks 0 .. n-1, a group of n consecutive ranks.
inline std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// nccl-tests' bus bandwidth (PERFORMANCE.md): S / t x (n-1)/n, x 2(n-1)/n for all-reduce.
inline double busbw(graph::OpKind kind, int n, double bytes, double seconds) {
  return bytes / seconds * (kind == graph::OpKind::all_reduce ? 2.0 : 1.0) * (n - 1) / n;
}

}  // namespace shardsim::test
