#include "engine/collectives/algorithm.hpp"

#include <cassert>

#include "engine/collectives/builtin.hpp"

namespace shardsim::engine::collectives {

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::ll:
      return "ll";
    case Protocol::ll128:
      return "ll128";
    case Protocol::simple:
      return "simple";
  }
  return "?";
}

void AlgorithmRegistry::add(std::unique_ptr<Algorithm> algorithm) {
  assert(find(algorithm->name()) == nullptr && "two algorithms with one name");
  algorithms_.push_back(std::move(algorithm));
}

const Algorithm* AlgorithmRegistry::find(std::string_view name) const {
  for (const auto& a : algorithms_) {
    if (a->name() == name) return a.get();
  }
  return nullptr;
}

std::vector<std::string_view> AlgorithmRegistry::names() const {
  std::vector<std::string_view> out;
  for (const auto& a : algorithms_) out.push_back(a->name());
  return out;
}

void register_builtin_algorithms(AlgorithmRegistry& registry) {
  // Tuner order: on a tie the earlier wins, as NCCL's loop over algorithms keeps the first best.
  registry.add(make_tree());
  registry.add(make_ring());
  registry.add(make_nvls());
  registry.add(make_hierarchical());
}

}  // namespace shardsim::engine::collectives
