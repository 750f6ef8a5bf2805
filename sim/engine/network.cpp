#include "engine/network.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace shardsim::engine {
namespace sg4 = simgrid::s4u;

Network::Network(Platform& platform, config::FlowGranularity flows, bool symmetric, int nodes_per_stage)
    : platform_(platform),
      granularity_(symmetric ? config::FlowGranularity::path : flows),
      symmetric_(symmetric),
      nodes_per_stage_(nodes_per_stage) {}

std::vector<Hop> Network::folded(const Path& p) const {
  if (!symmetric_) return p.hops;
  const int g = platform_.gpus_per_node();
  std::vector<int> leaving;  // node -> hops from it
  for (const Hop& h : p.hops) {
    const auto node = static_cast<std::size_t>(h.src / g);
    if (node >= leaving.size()) leaving.resize(node + 1, 0);
    ++leaving[node];
  }
  int busiest = 0;
  int most = -1;
  for (std::size_t node = 0; node < leaving.size(); ++node) {
    if (leaving[node] > most) busiest = static_cast<int>(node), most = leaving[node];
  }
  // A GPU's place on the folded platform: the same local GPU of its stage's node.
  const auto place = [&](int gpu) { return gpu / g / nodes_per_stage_ * g + gpu % g; };
  std::vector<Hop> out;
  for (const Hop& h : p.hops) {
    if (h.src / g == busiest) out.push_back(Hop{place(h.src), place(h.dst), h.via});
  }
  return out;
}

Network::Signature Network::signature(const std::vector<Hop>& hops) {
  Signature s;
  s.reserve(hops.size());
  for (const Hop& h : hops) s.emplace_back(h.src, h.dst, static_cast<int>(h.via), h.lane);
  return s;
}

std::vector<std::pair<std::vector<Hop>, double>> Network::lanes(const Path& p) const {
  std::vector<Hop> hops = folded(p);
  const int n = platform_.lanes();
  const bool crosses_nic = std::any_of(hops.begin(), hops.end(), [](const Hop& h) { return h.via == Via::nic; });
  std::vector<std::pair<std::vector<Hop>, double>> out;
  if (n == 1 || !crosses_nic) {
    out.emplace_back(std::move(hops), p.bytes);
    return out;
  }
  // ECMP: NCCL's channels and queue pairs are flows of their own to the switches' hash; each
  // lane carries its share of the path's bytes, in step along the ring as its channel does.
  for (int lane = 0; lane < n; ++lane) {
    std::vector<Hop> copy = hops;
    for (Hop& h : copy) h.lane = lane;
    out.emplace_back(std::move(copy), p.bytes / n);
  }
  return out;
}

Network::PathRefs Network::add_routes(const CollectivePlan& plan) {
  PathRefs refs;
  if (granularity_ != config::FlowGranularity::path) {
    for (const Path& p : plan.paths) {
      for (const Hop& h : p.hops) platform_.add_hop_route(h);
    }
    return refs;
  }
  for (const Path& p : plan.paths) {
    for (auto& [hops, bytes] : lanes(p)) {
      auto sig = signature(hops);
      auto it = paths_.find(sig);
      if (it == paths_.end()) {
        it = paths_.emplace(std::move(sig), static_cast<int>(hops_.size())).first;
        hops_.push_back(std::move(hops));
      }
      if (bytes > 0) refs.emplace_back(it->second, bytes);
    }
  }
  return refs;
}

Network::Routes Network::routes(const PathRefs& paths) const {
  Routes out;
  out.reserve(paths.size());
  for (const auto& [path, bytes] : paths) out.emplace_back(routes_[static_cast<std::size_t>(path)], bytes);
  return out;
}

void Network::build_routes() {
  if (granularity_ != config::FlowGranularity::path) return;
  // Which paths cross each link direction, and how many times. Paths are built one after the
  // other, so a resource's users are appended in path order.
  struct Resource {
    std::vector<std::pair<int, int>> users;  // (path, times crossed)
    double bandwidth = 0;
  };
  using Key = std::pair<const void*, int>;  // (link, direction)
  struct KeyHash {
    std::size_t operator()(const Key& k) const { return std::hash<const void*>()(k.first) * 31 + static_cast<std::size_t>(k.second); }
  };
  std::unordered_map<Key, int, KeyHash> index;
  std::vector<Resource> resources;
  std::vector<std::vector<int>> path_resources(hops_.size());
  for (std::size_t p = 0; p < hops_.size(); ++p) {
    for (const auto& l : platform_.links_of(hops_[p])) {
      const auto [it, fresh] =
          index.try_emplace(Key{l.get_link(), static_cast<int>(l.get_direction())}, static_cast<int>(resources.size()));
      if (fresh) resources.push_back(Resource{{}, l.get_link()->get_bandwidth()});
      auto& users = resources[static_cast<std::size_t>(it->second)].users;
      if (!users.empty() && users.back().first == static_cast<int>(p)) {
        ++users.back().second;
      } else {
        users.emplace_back(static_cast<int>(p), 1);
        path_resources[p].push_back(it->second);
      }
    }
  }
  // One link per class of (bandwidth, crossing paths with multiplicities).
  std::map<std::pair<double, std::vector<std::pair<int, int>>>, sg4::Link*> class_link;
  std::vector<sg4::Link*> link_of(resources.size());
  for (std::size_t r = 0; r < resources.size(); ++r) {
    auto key = std::make_pair(resources[r].bandwidth, resources[r].users);
    auto it = class_link.find(key);
    if (it == class_link.end()) it = class_link.emplace(std::move(key), platform_.add_class_link(resources[r].bandwidth)).first;
    link_of[r] = it->second;
  }
  classes_ = static_cast<int>(class_link.size());
  routes_.resize(hops_.size());
  for (std::size_t p = 0; p < hops_.size(); ++p) {
    std::vector<sg4::Link*> route;
    std::set<sg4::Link*> added;
    for (int r : path_resources[p]) {
      sg4::Link* l = link_of[static_cast<std::size_t>(r)];
      if (!added.insert(l).second) continue;
      int times = 0;
      for (const auto& [path, n] : resources[static_cast<std::size_t>(r)].users) {
        if (path == static_cast<int>(p)) times = n;
      }
      for (int i = 0; i < times; ++i) route.push_back(l);
    }
    routes_[p] = platform_.add_link_route(route);
  }
  path_resources_ = std::move(path_resources);
  for (auto& r : resources) {
    resource_users_.push_back(std::move(r.users));
    resource_bandwidth_.push_back(r.bandwidth);
  }
}

bool Network::isolated(const std::vector<int>& paths) const {
  for (int p : paths) {
    for (int r : path_resources_[static_cast<std::size_t>(p)]) {
      for (const auto& [user, times] : resource_users_[static_cast<std::size_t>(r)]) {
        if (!std::binary_search(paths.begin(), paths.end(), user)) return false;
      }
    }
  }
  return true;
}

std::vector<std::tuple<double, int, int>> Network::crossings(int path) const {
  std::vector<std::tuple<double, int, int>> out;
  for (int r : path_resources_[static_cast<std::size_t>(path)]) {
    const auto& users = resource_users_[static_cast<std::size_t>(r)];
    int times = 0;
    for (const auto& [user, n] : users) {
      if (user == path) times = n;
    }
    out.emplace_back(resource_bandwidth_[static_cast<std::size_t>(r)], static_cast<int>(users.size()), times);
  }
  return out;
}

namespace {

sg4::CommPtr flow(sg4::Host* src, sg4::Host* dst, double bytes, void* tag) {
  sg4::CommPtr c = sg4::Comm::sendto_init(src, dst);
  c->set_payload_size(bytes);
  c->set_data(tag);
  return c;
}

}  // namespace

Network::Routes Network::routes(const CollectivePlan& plan) const {
  Routes out;
  for (const Path& p : plan.paths) {
    if (p.bytes <= 0) continue;
    for (const auto& [hops, bytes] : lanes(p)) out.emplace_back(routes_[static_cast<std::size_t>(paths_.at(signature(hops)))], bytes);
  }
  return out;
}

std::vector<sg4::CommPtr> Network::flows(const Routes& routes, void* tag) const {
  std::vector<sg4::CommPtr> out;
  out.reserve(routes.size());
  for (const auto& [route, bytes] : routes) out.push_back(flow(platform_.path_src(route), platform_.path_dst(route), bytes, tag));
  return out;
}

std::vector<sg4::CommPtr> Network::flows(const CollectivePlan& plan, void* tag) const {
  if (by_path()) return flows(routes(plan), tag);
  std::vector<sg4::CommPtr> out;
  for (const Path& p : plan.paths) {
    if (p.bytes <= 0) continue;
    for (const Hop& h : p.hops) out.push_back(flow(platform_.gpu(h.src), platform_.gpu(h.dst), p.bytes, tag));
  }
  return out;
}

}  // namespace shardsim::engine
