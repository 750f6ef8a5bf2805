// Runs a step graph on a SimGrid model of the cluster and returns when every op ran on every
// rank. Compute ops are timed by a ComputeModel on the engine's own event queue (they never
// contend: one compute stream per GPU); collectives become flows that SimGrid shares with all
// other flows on the same links. SimGrid allows one engine per process: call simulate() once
// per process (sweeps run points in child processes).
#pragma once

#include <limits>

#include "config/scenario.hpp"
#include "config/topology.hpp"
#include "core/deadline.hpp"
#include "engine/collective.hpp"
#include "engine/compute_model.hpp"
#include "graph/outside_allocator.hpp"
#include "graph/step_graph.hpp"
#include "graph/timeline.hpp"

namespace shardsim::engine {

// Simulation statistics, for benchmarks.
struct EngineStats {
  double wall_seconds = 0;
  std::size_t op_instances = 0;  // ops x ranks completed
  std::size_t flows = 0;         // network flows started
  std::size_t timer_events = 0;
  std::size_t cohorts = 0;  // groups of ranks simulated as one (engine/cohorts.hpp), at the end
};

class FabricRegistry;

// How a collective's paths become SimGrid flows (collective.hpp): one flow per path through all
// its links (the default; O(1) flows per collective), or one flow per hop (O(n); the literal
// per-ring-edge form, kept to cross-check the first).
using config::FlowGranularity;

struct SimulationInput {
  const graph::StepGraph& graph;
  const config::TopologyConfig& topology;
  int nodes = 1;
  const ComputeModel& compute;
  const CollectiveAlgorithm& collective;
  FlowGranularity flows = FlowGranularity::path;
  config::SimulationMode mode = config::SimulationMode::full;
  config::Stragglers stragglers = {};
  // Wall-clock budget (simulation.max_wall_time), counted from the start of the command: past it
  // the run stops and throws RuntimeError.
  Deadline deadline = {};
  // Identical copies of the job on the fabric (cluster.jobs), each on `nodes` nodes laid out by
  // `placement`; job 0 is the one reported. Stragglers name job 0's ranks.
  int jobs = 1;
  config::Placement placement = config::Placement::packed;
  // Simulate ranks that run alike as one cohort (engine/cohorts.hpp). False runs every rank on
  // its own, as the engine did before cohorts: tests check that both give the same timeline.
  bool cohorts = true;
  // Run tensor-parallel instances launched together as one set of flows where that is exact
  // (Simulator::fold). False runs each instance's flows: tests check that both give the same timeline.
  bool fold = true;
  // Every rank's compute slowed by the fleet's GPU-to-GPU variation at its expected pace
  // (engine/variation.hpp: the slowest of the job's GPUs); 1: none.
  double pace = 1;
};

struct SimulationResult {
  // Of job 0's simulated ranks: all, or the representatives (symmetric mode): rank 0 alone, or with
  // pipeline stages every rank, each in the class of its stage's representative (its
  // simulated() count says how many were simulated). Ranks that ran every op at the same times
  // share a class (the engine's cohorts).
  graph::Timeline timeline;
  EngineStats stats;
  // Who waits for whom: per timeline class, when its ranks waited at a collective for the
  // group's last rank (arrival to launch); per simulated rank, when it held others up by arriving
  // last (the first other arrival to the launch). Intervals, not sums: waits on concurrent
  // streams overlap, and the report measures their union within the step.
  std::vector<std::vector<graph::Interval>> waiting;
  std::vector<std::vector<graph::Interval>> holding;
  // Per timeline class: when its compute stream stood idle for the CPU to issue kernels
  // (host.kernel_dispatch): before an op's first kernel, and within an op before its last.
  std::vector<std::vector<graph::Interval>> waiting_for_cpu;
  std::vector<double> job_ends;                    // per job (cluster.jobs): when its last op ended
  std::vector<graph::ComputeSplit> compute_split;  // per op: the compute model's seconds by kind of work (0 for collectives)
  // The algorithms each parallel group's collectives ran (scenario runs fill it; empty otherwise).
  std::vector<graph::CommunicatorUse> communicators;
};

// Whether `input` runs in symmetric mode (one representative rank per pipeline stage).
[[nodiscard]] bool symmetric_mode(const SimulationInput& input);

// How many ranks the engine simulates: every rank (full mode), or in symmetric mode one per
// pipeline stage (the stage's first rank, s x world / pp; rank 0 alone without pipelining).
[[nodiscard]] int representatives(const SimulationInput& input);

// Throws RuntimeError if the schedule stalls (an op never becomes ready) or if the run takes more
// its wall-clock deadline (the message says how far it got).
[[nodiscard]] SimulationResult simulate(const SimulationInput& input);

// Checks what the engine alone knows how to read in a topology (the fabric kind, the compute
// model), so that `shardsim check` catches it without simulating. Throws ConfigError.
void check_topology(const config::TopologyConfig& topology);

}  // namespace shardsim::engine
