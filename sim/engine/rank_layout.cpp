#include "engine/rank_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/hash.hpp"
#include "graph/groups.hpp"

namespace shardsim::engine {

double normal(std::uint64_t seed, int op, int rank) {
  const std::uint64_t a = mix64(seed ^ mix64(static_cast<std::uint64_t>(op) * 0x100000001B3ULL ^ static_cast<std::uint64_t>(rank)));
  const std::uint64_t b = mix64(a);
  const double u1 = (static_cast<double>(a >> 11U) + 0.5) / 9007199254740992.0;
  const double u2 = static_cast<double>(b >> 11U) / 9007199254740992.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);  // Box-Muller
}

int physical_rank(const SimulationInput& in, int job, int r) {
  if (in.placement == config::Placement::packed) return job * in.graph.info.world_size + r;
  const int g = in.topology.node.gpus;
  return (r / g * in.jobs + job) * g + r % g;
}

bool symmetric_mode(const SimulationInput& in) {
  switch (in.mode) {
    case config::SimulationMode::full:
      return false;
    case config::SimulationMode::symmetric:
      return true;
    case config::SimulationMode::automatic:
      break;
  }
  // Symmetric pays off at scale and is exact only when every rank does the same and no link is
  // shared between collective instances that symmetric mode would not simulate (GPUs sharing a
  // NIC, or oversubscribed uplinks: sibling groups then contend on links rank 0's do not see).
  constexpr int kAutoSymmetricFrom = 512;
  // ECMP pins each flow to a hashed spine: no two nodes' collectives cross the fabric alike.
  const bool shared_links = in.topology.node.nics < in.topology.node.gpus || in.topology.fabric.oversubscription > 1 ||
                            in.topology.fabric.routing == config::Routing::ecmp;
  // With tensor parallelism rank 0's TP and data-parallel collectives use its own ports; the other
  // groups' instances use other GPUs' ports and NICs (one per GPU where links are not shared), so
  // the representative sees what every rank sees (tests/unit/cli/tensor_parallel_test.cpp).
  // Pipeline stages run different programs: one rank stands for each stage, on a node of its own.
  return in.graph.info.world_size >= kAutoSymmetricFrom && !in.stragglers.any() && !shared_links && in.jobs == 1 && stages_fill_nodes(in);
}

std::string link_shared_between_instances(const graph::StepGraph& g, const config::TopologyConfig& topo, int nodes) {
  const int gpus = topo.node.gpus;
  const int nics = topo.node.nics;
  // A fat tree's leaf has one oversubscribed uplink that all of its nodes' NICs go up through
  // (platform.cpp); the other fabrics have none.
  const bool uplinks =
      topo.fabric.kind.name == "fat_tree" && topo.fabric.oversubscription > 1 && topo.fabric.routing != config::Routing::ecmp;
  if ((nics >= gpus && !uplinks) || nodes < 2) return "";
  std::array<bool, graph::kGroups> used{};
  for (std::size_t o = 0; o < g.size(); ++o) used[static_cast<std::size_t>(g.op(static_cast<int>(o)).group)] = true;
  const graph::Groups groups(g.info);
  const auto nic = [&](int rank) { return rank % gpus * nics / gpus; };  // of node 0, as the platform assigns them
  for (int k = 0; k < graph::kGroups; ++k) {
    const auto group = static_cast<graph::Group>(k);
    if (!used[static_cast<std::size_t>(k)] || group == graph::Group::none) continue;
    // Only instances that leave the node use its NICs.
    const auto members = group == graph::Group::pp ? groups.members(group, 0, 0, 1) : groups.members(group, groups.instance_of(group, 0));
    if (std::all_of(members.begin(), members.end(), [&](int r) { return r / gpus == 0; })) continue;
    for (int a = 0; a < gpus && a < g.info.world_size; ++a) {
      for (int b = a + 1; b < gpus && b < g.info.world_size; ++b) {
        if (groups.instance_of(group, a) == groups.instance_of(group, b)) continue;
        const std::string_view name = graph::to_string(group);
        if (nic(a) == nic(b)) {
          return fmt::format("ranks {} and {} share a NIC ({} for {} GPUs a node) in different {} groups", a, b, nics, gpus, name);
        }
        if (uplinks) {
          return fmt::format("ranks {} and {} share their node's {}:1 oversubscribed uplinks in different {} groups", a, b,
                             topo.fabric.oversubscription, name);
        }
      }
    }
  }
  return "";
}

int nodes_per_stage(const SimulationInput& in) {
  const int stage_gpus = in.graph.info.world_size / in.graph.info.pp_group;
  return stage_gpus % in.topology.node.gpus == 0 ? stage_gpus / in.topology.node.gpus : 0;
}

int representatives(const SimulationInput& in) {
  return symmetric_mode(in) ? in.graph.info.pp_group : in.graph.info.world_size;
}

}  // namespace shardsim::engine
