#include "engine/platform.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/hash.hpp"
#include "core/reader.hpp"

namespace shardsim::engine {
namespace sg4 = simgrid::s4u;

namespace {

sg4::Link* duplex(sg4::NetZone& zone, const std::string& name, double bandwidth) {
  auto* link = zone.create_split_duplex_link(name, bandwidth);
  // Latency is added per collective step by the algorithm (NCCL's model), not per flow.
  link->set_latency(0);
  link->seal();
  return link;
}

double effective(const config::LinkSpec& l) {
  return l.bandwidth.value() * l.efficiency;
}

// What a leaf switch of `nodes` nodes sends up to the spines: its NICs' rate over the
// oversubscription.
double leaf_uplink_bandwidth(const config::TopologyConfig& topo, int nodes) {
  return effective(topo.node.nic) * topo.node.nics * nodes / topo.fabric.oversubscription;
}

}  // namespace

void register_builtin_fabrics(FabricRegistry& registry) {
  auto none = [](sg4::NetZone&, const config::TopologyConfig&, int, int) { return std::vector<sg4::Link*>{}; };
  registry.add({"single_switch", "every NIC on one non-blocking switch", none});
  // Rail-optimised: NIC i of every node sits on rail switch i; the collectives shardsim builds
  // only send between GPUs of the same local rank across nodes, which stay on their rail.
  registry.add({"rail_optimized_fat_tree", "one non-blocking switch per rail (local GPU index)", none});
  // A fat tree whose leaf uplinks carry 1/oversubscription of the NIC bandwidth below them,
  // modelled as one shared uplink per leaf switch (fabric.nodes_per_leaf nodes); the spine
  // above is non-blocking.
  // With ECMP (fabric.routing: ecmp) a flow crosses one uplink of its own instead, to the spine
  // its hash picks (Platform::spine_link), even on a non-blocking tree.
  registry.add({"fat_tree", "leaf switches of fabric.nodes_per_leaf nodes with oversubscribed uplinks",
                [](sg4::NetZone& zone, const config::TopologyConfig& topo, int leaf, int nodes) {
                  if (topo.fabric.oversubscription <= 1.0 || topo.fabric.routing == config::Routing::ecmp) return std::vector<sg4::Link*>{};
                  return std::vector<sg4::Link*>{duplex(zone, fmt::format("uplink{}", leaf), leaf_uplink_bandwidth(topo, nodes))};
                }});
}

Platform::Platform(const config::TopologyConfig& topo, int nodes, const FabricRegistry& fabrics, bool folded, bool gpu_routes)
    : gpus_per_node_(topo.node.gpus),
      nics_per_node_(topo.node.nics),
      nodes_per_leaf_(folded ? 1 : topo.fabric.nodes_per_leaf),
      folded_(folded),
      mesh_(topo.node.nvlink_mesh),
      ecmp_seed_(topo.fabric.ecmp_seed),
      spines_(topo.fabric.routing == config::Routing::ecmp ? topo.fabric.spines : 0),
      spine_bandwidth_(spines_ > 0 ? leaf_uplink_bandwidth(topo, topo.fabric.nodes_per_leaf) / spines_ : 0),
      lanes_(topo.ecmp_lanes()) {
  const int nodes_per_leaf = nodes_per_leaf_;
  const FabricInfo& fabric = fabrics.get(topo.fabric.kind);
  const int g = topo.node.gpus;
  zone_ = sg4::create_star_zone("cluster");
  const auto world = static_cast<std::size_t>(nodes) * static_cast<std::size_t>(g);
  gpus_.reserve(world);
  nvlink_.reserve(mesh_ ? world * static_cast<std::size_t>(g) : world);
  nic_.reserve(static_cast<std::size_t>(nodes) * static_cast<std::size_t>(nics_per_node_));
  for (int leaf = 0; leaf * nodes_per_leaf < nodes; ++leaf) {
    // A leaf's uplinks are sized for a full leaf even where fewer of its nodes are in use.
    uplinks_.push_back(fabric.uplinks(*zone_, topo, leaf, nodes_per_leaf));
  }
  for (int node = 0; node < nodes; ++node) {
    for (int i = 0; i < nics_per_node_; ++i) {
      nic_.push_back(duplex(*zone_, fmt::format("nic{}", node * nics_per_node_ + i), effective(topo.node.nic)));
    }
    if (mesh_) {
      for (int a = 0; a < g; ++a) {
        for (int b = 0; b < g; ++b) {
          nvlink_.push_back(
              a < b ? duplex(*zone_, fmt::format("nvlink{}-{}", node * g + a, node * g + b), effective(topo.node.nvlink) / (g - 1))
                    : nullptr);
        }
      }
    }
    for (int local = 0; local < g; ++local) {
      const int rank = node * g + local;
      if (!mesh_) nvlink_.push_back(duplex(*zone_, fmt::format("nvlink{}", rank), effective(topo.node.nvlink)));
      if (!gpu_routes) continue;
      auto* host = zone_->create_host(fmt::format("gpu{}", rank), 1.0);
      std::vector<sg4::LinkInRoute> route{sg4::LinkInRoute(nic_of(rank), sg4::LinkInRoute::Direction::UP)};
      // (With ECMP each flow's spine is its own: only path flows, routed by append_links, run.)
      if (!ecmp()) {
        for (auto* up : uplinks_[static_cast<std::size_t>(node / nodes_per_leaf)]) route.emplace_back(up, sg4::LinkInRoute::Direction::UP);
      }
      zone_->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, route, true);
      gpus_.push_back(host);
    }
  }
  for (int node = 0; node < nodes && gpu_routes; ++node) {
    for (int a = 0; a < g; ++a) {
      for (int b = 0; b < g; ++b) {
        if (a == b) continue;
        const int ra = node * g + a;
        const int rb = node * g + b;
        std::vector<sg4::LinkInRoute> route;
        append_links(Hop{ra, rb, Via::nvlink}, route);
        zone_->add_bypass_route(gpu(ra)->get_netpoint(), gpu(rb)->get_netpoint(), nullptr, nullptr, route);
      }
    }
  }
}

sg4::Link* Platform::nic_of(int rank) const {
  return nic_[static_cast<std::size_t>(nic_index(rank))];
}

void Platform::append_links(const Hop& hop, std::vector<sg4::LinkInRoute>& route) const {
  using Dir = sg4::LinkInRoute::Direction;
  const auto src = static_cast<std::size_t>(hop.src);
  const auto dst = static_cast<std::size_t>(hop.dst);
  if (hop.via == Via::nvlink && mesh_) {
    route.emplace_back(pair_link(hop.src, hop.dst), hop.src < hop.dst ? Dir::UP : Dir::DOWN);
    return;
  }
  if (hop.via == Via::nvlink) {
    route.emplace_back(nvlink_[src], Dir::UP);
    route.emplace_back(nvlink_[dst], Dir::DOWN);
    return;
  }
  route.emplace_back(nic_of(hop.src), Dir::UP);
  // Folded (symmetric mode), a hop's ends are both on node 0: it stands for traffic leaving the
  // node, which crosses the uplinks.
  const bool across_leaves = folded_ || leaf_of(hop.src) != leaf_of(hop.dst);
  if (across_leaves && ecmp()) {
    const std::size_t spine = spine_of(hop);
    route.emplace_back(spine_link(leaf_of(hop.src), spine), Dir::UP);
    route.emplace_back(spine_link(leaf_of(hop.dst), spine), Dir::DOWN);
  } else if (across_leaves) {
    for (auto* up : uplinks_[static_cast<std::size_t>(leaf_of(hop.src))]) route.emplace_back(up, Dir::UP);
    for (auto* up : uplinks_[static_cast<std::size_t>(leaf_of(hop.dst))]) route.emplace_back(up, Dir::DOWN);
  }
  route.emplace_back(nic_of(hop.dst), Dir::DOWN);
}

std::size_t Platform::spine_of(const Hop& hop) const {
  // What a switch hashes: the two NICs' addresses and the flow's queue pair (its UDP source port).
  const auto key = static_cast<std::uint64_t>(nic_index(hop.src)) << 40U ^ static_cast<std::uint64_t>(nic_index(hop.dst)) << 16U ^
                   static_cast<std::uint64_t>(hop.lane);
  return static_cast<std::size_t>(mix64(ecmp_seed_ ^ mix64(key)) % static_cast<std::uint64_t>(spines_));
}

sg4::Link* Platform::spine_link(int leaf, std::size_t spine) const {
  const std::uint64_t key = static_cast<std::uint64_t>(leaf) * static_cast<std::uint64_t>(spines_) + spine;
  auto [it, fresh] = spine_links_.try_emplace(key, nullptr);
  if (fresh) it->second = duplex(*zone_, fmt::format("uplink{}.{}", leaf, spine), spine_bandwidth_);
  return it->second;
}

std::vector<sg4::LinkInRoute> Platform::links_of(const std::vector<Hop>& hops) const {
  std::vector<sg4::LinkInRoute> route;
  route.reserve(hops.size() * 2);
  for (const Hop& h : hops) append_links(h, route);
  return route;
}

sg4::Link* Platform::add_class_link(double bandwidth) {
  auto* link = zone_->create_link(fmt::format("class{}", class_links_++), bandwidth);
  link->set_latency(0);
  link->seal();
  return link;
}

int Platform::add_link_route(const std::vector<sg4::Link*>& links) {
  const int id = static_cast<int>(path_hosts_.size() / 2);
  auto* src = zone_->create_host(fmt::format("path{}.src", id), 1.0);
  auto* dst = zone_->create_host(fmt::format("path{}.dst", id), 1.0);
  std::vector<sg4::LinkInRoute> route;
  route.reserve(links.size());
  for (auto* l : links) route.emplace_back(l);
  zone_->add_bypass_route(src->get_netpoint(), dst->get_netpoint(), nullptr, nullptr, route);
  path_hosts_.push_back(src);
  path_hosts_.push_back(dst);
  return id;
}

int Platform::add_path_route(const std::vector<Hop>& hops) {
  const int id = static_cast<int>(path_hosts_.size() / 2);
  auto* src = zone_->create_host(fmt::format("path{}.src", id), 1.0);
  auto* dst = zone_->create_host(fmt::format("path{}.dst", id), 1.0);
  std::vector<sg4::LinkInRoute> route;
  route.reserve(hops.size() * 2);
  for (const Hop& h : hops) append_links(h, route);
  zone_->add_bypass_route(src->get_netpoint(), dst->get_netpoint(), nullptr, nullptr, route);
  path_hosts_.push_back(src);
  path_hosts_.push_back(dst);
  return id;
}

void Platform::add_hop_route(const Hop& hop) {
  if (hop.via != Via::nic || !hop_routes_.emplace(hop.src, hop.dst).second) return;
  std::vector<sg4::LinkInRoute> route;
  append_links(hop, route);
  zone_->add_bypass_route(gpu(hop.src)->get_netpoint(), gpu(hop.dst)->get_netpoint(), nullptr, nullptr, route);
}

sg4::Link* Platform::pair_link(int a, int b) const {
  const int g = gpus_per_node_;
  const int node = a / g;
  const int lo = std::min(a, b) % g;
  const int hi = std::max(a, b) % g;
  return nvlink_[static_cast<std::size_t>((node * g + lo) * g + hi)];
}

void Platform::degrade(int rank, config::LinkKind link, double factor) {
  const auto slow = [factor](sg4::Link* l) { l->set_bandwidth(l->get_bandwidth() * factor); };
  // A degraded NIC slows every GPU that shares it (node.nics below node.gpus).
  if (link == config::LinkKind::nic) {
    slow(nic_of(rank));
  } else if (mesh_) {
    // A GPU's NVLink in a mesh: its links to every other GPU of the node.
    const int first = rank / gpus_per_node_ * gpus_per_node_;
    for (int other = first; other < first + gpus_per_node_; ++other) {
      if (other != rank) slow(pair_link(rank, other));
    }
  } else {
    slow(nvlink_[static_cast<std::size_t>(rank)]);
  }
}

void Platform::seal() {
  zone_->seal();
}

}  // namespace shardsim::engine
