// Command-line pieces shardsim-replay and shardsim-bench share.
#pragma once

#include <optional>
#include <string>

#include "core/args.hpp"
#include "graph/step_graph.hpp"
#include "tools/ranks.hpp"

namespace shardsim::replay {

// Declares --backend, --nprocs, --timeout, --compute-scale, --bytes-scale, --rendezvous.
void declare_backend_options(Args& args);

// Reads them; `out_dir` is the default rendezvous directory. Throws UsageError.
[[nodiscard]] BackendChoice backend_choice(const Args& args, const std::string& out_dir);

// --nprocs N, if given (an integer >= 1).
[[nodiscard]] std::optional<int> nprocs(const Args& args);

// A step graph written by `shardsim export`. Throws ConfigError naming the file.
[[nodiscard]] graph::StepGraph load_graph(const std::string& file);

}  // namespace shardsim::replay
