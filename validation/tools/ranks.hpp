// What shardsim-replay and shardsim-bench share: picking the backend, starting one process per
// rank when no launcher did, the watchdog, and turning errors into messages and exit codes
// (1 runtime failure, 2 bad input) on every rank.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "cpu/cpu_backend.hpp"
#include "replay/backend.hpp"
#include "replay/rank_env.hpp"
#include "replay/watchdog.hpp"

namespace shardsim::replay {

struct BackendChoice {
  std::string name;  // cpu | nccl
  CpuScale scale;
  std::filesystem::path rendezvous_dir;  // nccl: where rank 0 publishes the NCCL id
  double timeout = 300;                  // seconds without progress before a rank gives up
};

// The backends this build has, for messages: "cpu (MPI), nccl".
[[nodiscard]] std::string available_backends();

using RankBody = std::function<int(Backend& backend, Watchdog& watchdog, const RankEnv& env)>;

// Runs `body` once per rank of a `world`-rank job and returns the exit code. Without launcher
// variables it starts the ranks itself: forked children for nccl (before any CUDA call),
// mpirun re-running `tool argv` for cpu. Under torchrun / mpirun it is one of the ranks.
[[nodiscard]] int run_on_ranks(const std::string& tool, const BackendChoice& choice, int world, std::span<const std::string> argv,
                               const RankBody& body);

}  // namespace shardsim::replay
