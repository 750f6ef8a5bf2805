#include "engine/simulator.hpp"

#include <pthread.h>
#include <xbt/log.h>

#include <csignal>
#include <simgrid/s4u.hpp>

#include "core/error.hpp"
#include "engine/network.hpp"
#include "engine/platform.hpp"
#include "engine/rank_layout.hpp"
#include "engine/scheduler.hpp"

namespace shardsim::engine {
namespace sg4 = simgrid::s4u;

SimulationResult simulate(const SimulationInput& in) {
  int argc = 1;
  char name[] = "shardsim";
  char* argv[] = {name, nullptr};
  // SimGrid installs a SIGINT handler that calls exit(1); keep the program's own (main's, which
  // removes half-written output files and ends the process by the signal). SIGINT is held back
  // while the engine starts, so that one arriving then waits for the program's handler rather
  // than meeting SimGrid's (a run interrupted there ended with exit code 1, not by the signal).
  sigset_t sigint;
  sigset_t before;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &sigint, &before);
  struct sigaction previous_sigint {};
  ::sigaction(SIGINT, nullptr, &previous_sigint);
  sg4::Engine engine(&argc, argv);
  ::sigaction(SIGINT, &previous_sigint, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  xbt_log_control_set("root.thres:critical");
  // CM02: plain max-min sharing without TCP corrections; no reverse ACK traffic; no TCP window
  // cap (shared/reference/simgrid-notes.md). Lazy updates: each event re-solves only the sharing
  // of the flows it touches and keeps the others' completion times in a heap, where Full
  // re-solves and rescans every flow in flight. Same results (the published ledger is identical
  // to the last digit); faster wherever many flows are in flight at once, most where every rank
  // is simulated on its own (stragglers.jitter: a 70B TP 8 x PP 2 job on 384 GPUs 58 -> 28 s;
  // make bench's 405B TP 8 x PP 16 x FSDP, full, 8.7 -> 6.4 s; edge flows, 70B on 1,024 GPUs,
  // 8.1 -> 6.6 s).
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config("network/optim:Lazy");
  const bool symmetric = symmetric_mode(in);
  if (symmetric && in.jobs > 1) throw RuntimeError("symmetric mode simulates one job; cluster.jobs > 1 needs full mode");
  FabricRegistry fabrics;
  register_builtin_fabrics(fabrics);
  const bool per_hop = !symmetric && in.flows == FlowGranularity::edge;
  // Symmetric: one node per pipeline stage (one without pipelining), where its representative
  // runs; a stage's nodes fold onto its node.
  const int stages = in.graph.info.pp_group;
  Platform platform(in.topology, symmetric ? stages : in.nodes * in.jobs, fabrics, symmetric, per_hop);
  for (const auto& d : in.stragglers.degraded_links) platform.degrade(physical_rank(in, 0, static_cast<int>(d.rank)), d.link, d.factor);
  Network network(platform, in.flows, symmetric, symmetric ? nodes_per_stage(in) : 1);
  Simulator sim(in, representatives(in));
  sim.add_routes(network);
  network.build_routes();
  sim.fold(network);
  platform.seal();
  SimulationResult result = sim.run(network);
  result.compute_split.resize(in.graph.size());
  for (std::size_t o = 0; o < in.graph.size(); ++o) {
    const graph::Op& op = in.graph.op(static_cast<int>(o));
    if (!op.is_collective()) result.compute_split[o] = in.compute.split(op);
  }
  return result;
}

void check_topology(const config::TopologyConfig& topology) {
  FabricRegistry fabrics;
  register_builtin_fabrics(fabrics);
  (void)fabrics.get(topology.fabric.kind);
  ComputeModelRegistry compute_models;
  register_builtin_compute_models(compute_models);
  (void)compute_models.get(topology.gpu.compute_model);
}

}  // namespace shardsim::engine
