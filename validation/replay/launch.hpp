// Starting one process per rank when no launcher did (no torchrun or mpirun variables).
#pragma once

#include <functional>
#include <span>
#include <string>

namespace shardsim::replay {

// Runs body() in `world` child processes, one per rank, each with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE and SHARDSIM_RUN_ID set. The fork happens before the caller touches CUDA (a
// CUDA context does not survive fork). Returns 0 if every child exits 0. When one fails, the
// others get SIGTERM, then SIGKILL after `grace` seconds, and its exit code is returned (1 if it
// died of a signal): a rank that dies never leaves its peers hanging.
[[nodiscard]] int run_ranks(int world, double grace, const std::function<int()>& body);

// Replaces this process with `mpirun -n N ... <this program> args`, for backends whose ranks talk
// through MPI. Adds --oversubscribe (more ranks than cores is fine for a replay) and, as root,
// --allow-run-as-root. Throws RuntimeError if mpirun cannot be started.
[[noreturn]] void exec_under_mpirun(int world, std::span<const std::string> args);

}  // namespace shardsim::replay
