#include "graph/step_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/topological_sort.hpp>
#include <iterator>

#include "core/error.hpp"

namespace shardsim::graph {

int StepGraph::add_op(Op op) {
  const auto v = boost::add_vertex(*dag_);
  op.id = static_cast<int>(v);
  (*dag_)[v] = std::move(op);
  return static_cast<int>(v);
}

void StepGraph::add_edge(int from, int to, EdgeKind kind) {
  if (from < 0 || from == to) return;
  const auto u = static_cast<std::size_t>(from);
  const auto v = static_cast<std::size_t>(to);
  if (auto [e, exists] = boost::edge(u, v, *dag_); exists) {
    // Keep the most telling kind: data > rate_limit > prefetch > cpu > stream.
    auto rank = [](EdgeKind k) {
      switch (k) {
        case EdgeKind::data:
          return 4;
        case EdgeKind::rate_limit:
          return 3;
        case EdgeKind::prefetch:
          return 2;
        case EdgeKind::cpu:
          return 1;
        case EdgeKind::stream:
          return 0;
      }
      return 0;
    };
    if (rank(kind) > rank((*dag_)[e].kind)) (*dag_)[e].kind = kind;
    return;
  }
  boost::add_edge(u, v, EdgeProps{kind}, *dag_);
}

std::vector<std::pair<int, EdgeKind>> StepGraph::predecessors(int id) const {
  std::vector<std::pair<int, EdgeKind>> out;
  for (auto [it, end] = boost::in_edges(static_cast<std::size_t>(id), *dag_); it != end; ++it) {
    out.emplace_back(static_cast<int>(boost::source(*it, *dag_)), (*dag_)[*it].kind);
  }
  return out;
}

std::vector<std::pair<int, EdgeKind>> StepGraph::successors(int id) const {
  std::vector<std::pair<int, EdgeKind>> out;
  for (auto [it, end] = boost::out_edges(static_cast<std::size_t>(id), *dag_); it != end; ++it) {
    out.emplace_back(static_cast<int>(boost::target(*it, *dag_)), (*dag_)[*it].kind);
  }
  return out;
}

std::vector<int> StepGraph::topological_order() const {
  std::vector<std::size_t> reversed;
  reversed.reserve(size());
  try {
    boost::topological_sort(*dag_, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    throw RuntimeError("the step graph has a cycle: the FSDP schedule would deadlock");
  }
  std::vector<int> order(reversed.rbegin(), reversed.rend());
  return order;
}

}  // namespace shardsim::graph
