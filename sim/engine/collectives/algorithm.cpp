#include "engine/collectives/algorithm.hpp"

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

void register_builtin_algorithms(AlgorithmRegistry& registry) {
  // Tuner order: on a tie the earlier wins, as NCCL's loop over algorithms keeps the first best.
  registry.add(make_tree());
  registry.add(make_ring());
  registry.add(make_nvls());
  registry.add(make_hierarchical());
}

}  // namespace shardsim::engine::collectives
