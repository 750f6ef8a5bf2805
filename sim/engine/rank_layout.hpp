// How the engine places and varies ranks (internal to the engine): which GPU of the platform
// each rank of each job runs on, whether one representative rank stands for all (symmetric
// mode), and the jitter draw that makes ranks differ reproducibly.
#pragma once

#include <cstdint>
#include <string>

#include "engine/simulator.hpp"

namespace shardsim::engine {

// The GPU (platform rank) that rank `r` of job `job` runs on (cluster.placement): packed jobs
// take consecutive nodes; interleaved, node n of job j is node n * jobs + j.
[[nodiscard]] int physical_rank(const SimulationInput& in, int job, int r);

// The nodes one pipeline stage spans (all of them without pipelining), 0 where a stage does not
// fill whole nodes. Symmetric mode needs whole nodes: it simulates one rank per stage, each on a
// node of its own onto which the stage's nodes fold.
[[nodiscard]] int nodes_per_stage(const SimulationInput& in);
[[nodiscard]] inline bool stages_fill_nodes(const SimulationInput& in) {
  return nodes_per_stage(in) > 0;
}

// Where symmetric mode would miss contention: it simulates rank 0's instance of each collective,
// folded onto its node, so two GPUs that share a NIC (node.nics below node.gpus) or the node's
// oversubscribed uplinks but belong to different instances of a group that leaves the node
// (hybrid sharding's replicate groups, the data-parallel groups beside tensor parallelism,
// pipeline sends) would each see the link as their own. Empty where there is none; else which
// ranks, link and group, for the message.
[[nodiscard]] std::string link_shared_between_instances(const graph::StepGraph& g, const config::TopologyConfig& topo, int nodes);

// A deterministic standard normal draw for (seed, op, rank), independent of event order.
[[nodiscard]] double normal(std::uint64_t seed, int op, int rank);

}  // namespace shardsim::engine
