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
  const int id = op.id;
  if (op.stage < 0) {
    every_stage_.push_back(id);
  } else {
    const auto add_to = [this, id](int s) {
      if (static_cast<std::size_t>(s) >= staged_.size()) staged_.resize(static_cast<std::size_t>(s) + 1);
      staged_[static_cast<std::size_t>(s)].push_back(id);
    };
    add_to(op.stage);
    if (op.peer_stage >= 0 && op.peer_stage != op.stage) add_to(op.peer_stage);
  }
  (*dag_)[v] = std::move(op);
  return id;
}

std::vector<int> StepGraph::ops_on_stage(int s) const {
  const std::vector<int> none;
  const auto& own = s >= 0 && static_cast<std::size_t>(s) < staged_.size() ? staged_[static_cast<std::size_t>(s)] : none;
  std::vector<int> out;
  out.reserve(every_stage_.size() + own.size());
  std::merge(every_stage_.begin(), every_stage_.end(), own.begin(), own.end(), std::back_inserter(out));
  return out;
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
