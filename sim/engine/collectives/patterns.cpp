#include "engine/collectives/patterns.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <map>

namespace shardsim::engine::collectives {

GroupShape shape_of(std::span<const int> ranks, const ClusterView& cluster) {
  GroupShape s;
  s.ranks = static_cast<int>(ranks.size());
  if (ranks.empty()) return s;
  // Blocks of consecutive ranks on one node.
  std::vector<int> block_sizes;
  std::vector<int> block_nodes;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int node = cluster.node_of(ranks[i]);
    if (i == 0 || node != block_nodes.back()) {
      block_nodes.push_back(node);
      block_sizes.push_back(0);
    }
    ++block_sizes.back();
  }
  std::vector<int> distinct = block_nodes;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  s.nodes = static_cast<int>(distinct.size());
  s.uniform = distinct.size() == block_nodes.size() &&
              std::all_of(block_sizes.begin(), block_sizes.end(), [&](int b) { return b == block_sizes.front(); });
  s.per_node = s.uniform ? block_sizes.front() : 0;
  // Ranks per NIC: on a uniform group every node looks like the first.
  std::map<int, int> per_nic;
  const std::size_t scan = s.uniform ? static_cast<std::size_t>(s.per_node) : ranks.size();
  for (std::size_t i = 0; i < scan; ++i) s.per_nic = std::max(s.per_nic, ++per_nic[cluster.nic_of(ranks[i])]);
  return s;
}

Traffic& Traffic::scale(double nvlink, double nic) {
  intra *= nvlink;
  rail_ring *= nic;
  rail_tree *= nic;
  flat_ring *= std::max(nvlink, nic);
  return *this;
}

std::array<std::vector<int>, 2> double_tree_parents(int n) {
  // In-order binary tree rooted at 0: a rank's lowest set bit `bit` gives its level; its parent
  // clears that bit and sets the next one, or only clears it past the end.
  auto btree_parent = [n](int r) {
    if (r == 0) return -1;
    const int bit = r & -r;
    const int up = (r ^ bit) | (bit << 1);
    return up < n ? up : (r ^ bit);
  };
  std::array<std::vector<int>, 2> parents{std::vector<int>(static_cast<std::size_t>(n)), std::vector<int>(static_cast<std::size_t>(n))};
  for (int r = 0; r < n; ++r) {
    parents[0][static_cast<std::size_t>(r)] = btree_parent(r);
    int p = -1;
    if (n % 2 == 1) {
      const int u = btree_parent((r - 1 + n) % n);  // shift by one
      p = u < 0 ? -1 : (u + 1) % n;
    } else {
      const int u = btree_parent(n - 1 - r);  // mirror
      p = u < 0 ? -1 : n - 1 - u;
    }
    parents[1][static_cast<std::size_t>(r)] = p;
  }
  return parents;
}

namespace {

// Edges of both trees at each of n ranks.
std::vector<int> double_tree_degrees(const std::array<std::vector<int>, 2>& trees, int n) {
  std::vector<int> degree(static_cast<std::size_t>(std::max(n, 0)), 0);
  for (const auto& tree : trees) {
    for (int r = 0; r < n; ++r) {
      const int p = tree[static_cast<std::size_t>(r)];
      if (p < 0) continue;
      ++degree[static_cast<std::size_t>(r)];
      ++degree[static_cast<std::size_t>(p)];
    }
  }
  return degree;
}

}  // namespace

int double_tree_max_degree(int n) {
  const std::vector<int> degree = double_tree_degrees(double_tree_parents(n), n);
  return degree.empty() ? 0 : *std::max_element(degree.begin(), degree.end());
}

namespace {

// The node (of a rank) that sends most hops, given each sender's count; the lowest-numbered of
// equals, as Network::folded picks it.
struct Busiest {
  int node = -1;
  int hops = -1;
  void consider(int n, int count) {
    if (count > hops || (count == hops && n < node)) node = n, hops = count;
  }
};

}  // namespace

std::vector<Path> to_paths(const Traffic& t, std::span<const int> ranks, const GroupShape& shape, const ClusterView& cluster) {
  std::vector<Path> paths;
  const int n = shape.ranks;
  if (n <= 1) return paths;
  auto at = [&](int i) { return ranks[static_cast<std::size_t>(i)]; };
  const bool fold = cluster.busiest_node_only;
  // Which node's hops a path keeps: all (-1), or the busiest's.
  auto keep = [&](int node, int src) { return node < 0 || cluster.node_of(src) == node; };
  if (!shape.uniform) {
    // One hop leaves every rank: the busiest node holds most ranks.
    int only = -1;
    if (fold) {
      std::map<int, int> per_node;
      for (int i = 0; i < n; ++i) ++per_node[cluster.node_of(at(i))];
      Busiest b;
      for (const auto& [node, count] : per_node) b.consider(node, count);
      only = b.node;
    }
    Path flat{{}, t.flat_ring};
    for (int i = 0; i < n; ++i) {
      const int a = at(i);
      const int b = at((i + 1) % n);
      if (keep(only, a)) flat.hops.push_back(Hop{a, b, cluster.node_of(a) == cluster.node_of(b) ? Via::nvlink : Via::nic});
    }
    paths.push_back(std::move(flat));
    return paths;
  }
  assert(t.flat_ring == 0);
  const int g = shape.per_node;
  const int nodes = shape.nodes;
  // Node k of the group (ranks k g ... k g + g - 1 in ring order) is cluster node node_of(at(k g)).
  auto node_at = [&](int k) { return cluster.node_of(at(k * g)); };
  // The intra-node pattern and the rails' ring send g hops from every node: the lowest one is busiest.
  int lowest = -1;
  if (fold) {
    Busiest b;
    for (int k = 0; k < nodes; ++k) b.consider(node_at(k), g);
    lowest = b.node;
  }
  if (g >= 2) {
    // Through an NVSwitch one ring, each member sending to the next. In a mesh NCCL spreads its
    // channels over the pairs among the members: g - 1 patterns, in the r-th each member sends to
    // the one r places on, each carrying 1/(g - 1) of the bytes, so that every pair link is used.
    const int shifts = cluster.nvlink_mesh ? g - 1 : 1;
    for (int r = 1; r <= shifts; ++r) {
      Path intra{{}, t.intra / shifts};
      intra.hops.reserve(static_cast<std::size_t>(fold ? g : n));
      for (int i = 0; i < n; ++i) {
        if (keep(lowest, at(i))) intra.hops.push_back(Hop{at(i), at(i / g * g + (i % g + r) % g), Via::nvlink});
      }
      paths.push_back(std::move(intra));
    }
  }
  if (nodes >= 2) {
    Path ring{{}, t.rail_ring};
    ring.hops.reserve(static_cast<std::size_t>(fold ? g : n));
    for (int i = 0; i < n; ++i) {
      if (keep(lowest, at(i))) ring.hops.push_back(Hop{at(i), at((i / g + 1) % nodes * g + i % g), Via::nic});
    }
    paths.push_back(std::move(ring));
    // The trees: a node sends g hops per tree edge it is on (up as the child, down as the parent).
    const auto trees = double_tree_parents(nodes);
    int busiest = -1;
    if (fold) {
      const std::vector<int> degree = double_tree_degrees(trees, nodes);
      Busiest b;
      for (int k = 0; k < nodes; ++k) b.consider(node_at(k), g * degree[static_cast<std::size_t>(k)]);
      busiest = b.node;
    }
    Path tree{{}, t.rail_tree};
    for (const auto& parents : trees) {
      for (int k = 0; k < nodes; ++k) {
        const int p = parents[static_cast<std::size_t>(k)];
        if (p < 0) continue;
        for (int l = 0; l < g; ++l) {
          // reduce, up the tree; broadcast, down
          if (keep(busiest, at(k * g + l))) tree.hops.push_back(Hop{at(k * g + l), at(p * g + l), Via::nic});
          if (keep(busiest, at(p * g + l))) tree.hops.push_back(Hop{at(p * g + l), at(k * g + l), Via::nic});
        }
      }
    }
    paths.push_back(std::move(tree));
  } else {
    assert(t.rail_ring == 0 && t.rail_tree == 0);
  }
  return paths;
}

double transfer_time(const Traffic& t, std::span<const int> ranks, const GroupShape& shape, const ClusterView& cluster) {
  const double nvlink = cluster.nvlink.bandwidth.value() * cluster.nvlink.efficiency;
  const double nic = cluster.nic.bandwidth.value() * cluster.nic.efficiency;
  if (shape.ranks <= 1) return 0.0;
  if (shape.uniform) {
    // In a mesh the group's members in a node share g - 1 of a GPU's gpus_per_node - 1 pair links.
    const double intra_rate = nvlink * (cluster.nvlink_mesh ? (shape.per_node - 1) * cluster.nvlink_pair_share() : 1.0);
    const double intra = shape.per_node >= 2 ? t.intra / intra_rate : 0.0;
    const double inter = shape.nodes >= 2 ? shape.per_nic * (t.rail_ring + t.rail_tree * double_tree_max_degree(shape.nodes)) / nic : 0.0;
    return std::max(intra, inter);
  }
  // Flat ring: count each port's hops (in a mesh, each pair link's, at a pair's share).
  std::map<int, int> nvl_out;  // hops per port (pair) and direction
  std::map<int, int> nvl_in;
  std::map<int, int> nic_out;
  std::map<int, int> nic_in;
  const auto n = ranks.size();
  int most_nvl = 0;
  int most_nic = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int a = ranks[i];
    const int b = ranks[(i + 1) % n];
    if (cluster.node_of(a) != cluster.node_of(b)) {
      most_nic = std::max({most_nic, ++nic_out[cluster.nic_of(a)], ++nic_in[cluster.nic_of(b)]});
    } else if (cluster.nvlink_mesh) {
      most_nvl = std::max(most_nvl, ++nvl_out[a * cluster.gpus_per_node + b % cluster.gpus_per_node]);
    } else {
      most_nvl = std::max({most_nvl, ++nvl_out[a], ++nvl_in[b]});
    }
  }
  return std::max(most_nvl * t.flat_ring / (nvlink * cluster.nvlink_pair_share()), most_nic * t.flat_ring / nic);
}

}  // namespace shardsim::engine::collectives
