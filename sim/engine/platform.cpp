#include "engine/platform.hpp"

#include <fmt/format.h>

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

double effective(const config::LinkSpec& l) { return l.bandwidth.value() * l.efficiency; }

}  // namespace

const FabricInfo& FabricRegistry::find(const config::Choice& kind) const {
  std::vector<std::string_view> names;
  for (const auto& f : infos_) {
    if (f.name == kind.name) return f;
    names.push_back(f.name);
  }
  std::string message = fmt::format("unknown fabric kind \"{}\"; expected one of {}", kind.name, join(names));
  if (auto g = closest_match(kind.name, names); !g.empty()) message += fmt::format(" (did you mean \"{}\"?)", g);
  throw ConfigError(kind.where, kind.path, message);
}

void register_builtin_fabrics(FabricRegistry& registry) {
  auto none = [](sg4::NetZone&, const config::TopologyConfig&, int) { return std::vector<sg4::Link*>{}; };
  registry.add({"single_switch", "every NIC on one non-blocking switch", none});
  // Rail-optimised: NIC i of every node sits on rail switch i; the collectives shardsim builds
  // only send between GPUs of the same local rank across nodes, which stay on their rail.
  registry.add({"rail_optimized_fat_tree", "one non-blocking switch per rail (local GPU index)", none});
  // A fat tree whose leaf uplinks carry 1/oversubscription of the NIC bandwidth below them,
  // modelled as one shared uplink per node.
  registry.add({"fat_tree", "leaf switches with oversubscribed uplinks (one per node)",
                [](sg4::NetZone& zone, const config::TopologyConfig& topo, int node) {
                  if (topo.fabric.oversubscription <= 1.0) return std::vector<sg4::Link*>{};
                  const double bw = effective(topo.node.nic) * topo.node.gpus / topo.fabric.oversubscription;
                  return std::vector<sg4::Link*>{duplex(zone, fmt::format("uplink{}", node), bw)};
                }});
}

Platform::Platform(const config::TopologyConfig& topo, int nodes, const FabricRegistry& fabrics) {
  const FabricInfo& fabric = fabrics.find(topo.fabric.kind);
  const int g = topo.node.gpus;
  auto* zone = sg4::create_star_zone("cluster");
  gpus_.reserve(static_cast<std::size_t>(nodes) * static_cast<std::size_t>(g));
  std::vector<sg4::Link*> nvlink;
  for (int node = 0; node < nodes; ++node) {
    const auto uplinks = fabric.uplinks(*zone, topo, node);
    for (int local = 0; local < g; ++local) {
      const int rank = node * g + local;
      auto* host = zone->create_host(fmt::format("gpu{}", rank), 1.0);
      auto* nic = duplex(*zone, fmt::format("nic{}", rank), effective(topo.node.nic));
      nvlink.push_back(duplex(*zone, fmt::format("nvlink{}", rank), effective(topo.node.nvlink)));
      std::vector<sg4::LinkInRoute> route{sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::UP)};
      for (auto* up : uplinks) route.emplace_back(up, sg4::LinkInRoute::Direction::UP);
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, route, true);
      gpus_.push_back(host);
    }
  }
  for (int node = 0; node < nodes; ++node) {
    for (int a = 0; a < g; ++a) {
      for (int b = 0; b < g; ++b) {
        if (a == b) continue;
        const auto ra = static_cast<std::size_t>(node * g + a);
        const auto rb = static_cast<std::size_t>(node * g + b);
        zone->add_bypass_route(gpus_[ra]->get_netpoint(), gpus_[rb]->get_netpoint(), nullptr, nullptr,
                               {sg4::LinkInRoute(nvlink[ra], sg4::LinkInRoute::Direction::UP),
                                sg4::LinkInRoute(nvlink[rb], sg4::LinkInRoute::Direction::DOWN)});
      }
    }
  }
  // Runs the engine's timer activities: speed 1 (flops = seconds) and enough cores that the few
  // timers alive at once never share one.
  clock_ = zone->create_host("clock", 1.0);
  clock_->set_core_count(1024);
  zone->seal();
}

}  // namespace shardsim::engine
