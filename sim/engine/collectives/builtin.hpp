// The built-in algorithms, one per file; register_builtin_algorithms (algorithm.cpp) adds them.
#pragma once

#include <memory>

#include "engine/collectives/algorithm.hpp"

namespace shardsim::engine::collectives {

[[nodiscard]] std::unique_ptr<Algorithm> make_ring();          // ring.cpp
[[nodiscard]] std::unique_ptr<Algorithm> make_tree();          // tree.cpp
[[nodiscard]] std::unique_ptr<Algorithm> make_nvls();          // nvls.cpp
[[nodiscard]] std::unique_ptr<Algorithm> make_hierarchical();  // hierarchical.cpp

}  // namespace shardsim::engine::collectives
