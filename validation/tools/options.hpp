// Command-line pieces shardsim-replay and shardsim-bench share.
#pragma once

#include <optional>
#include <string>

#include "cli/args.hpp"
#include "graph/step_graph.hpp"
#include "tools/ranks.hpp"

namespace shardsim::replay {

// Declares --backend, --nprocs, --timeout, --compute-scale, --bytes-scale, --rendezvous.
void declare_backend_options(cli::Args& args);

// Reads them; `out_dir` is the default rendezvous directory. Throws cli::UsageError.
[[nodiscard]] BackendChoice backend_choice(const cli::Args& args, const std::string& out_dir);

// --nprocs N, if given (an integer >= 1).
[[nodiscard]] std::optional<int> nprocs(const cli::Args& args);

// A step graph written by `shardsim export`. Throws ConfigError naming the file.
[[nodiscard]] graph::StepGraph load_graph(const std::string& file);

}  // namespace shardsim::replay
