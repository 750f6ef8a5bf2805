// Who this process is in a multi-process replay, from the launcher's environment variables:
// torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, or
// OpenMPI's OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE (mpirun).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace shardsim::replay {

enum class Launcher { none, torchrun, mpirun };

struct RankEnv {
  Launcher launcher = Launcher::none;
  int rank = 0;
  int world = 1;
  int local_rank = 0;   // selects the GPU
  int local_world = 1;  // ranks on this node
  std::string master_addr;
  int master_port = 0;
  std::string run_id;  // TORCHELASTIC_RUN_ID or SHARDSIM_RUN_ID: names rendezvous files
};

using GetEnv = std::function<const char*(const char*)>;

// Reads the variables through `getenv` (std::getenv in production, a map in tests). Without
// launcher variables, a single rank. Throws ConfigError naming the variable when a value is not
// a number or out of range.
[[nodiscard]] RankEnv rank_env(const GetEnv& getenv);

}  // namespace shardsim::replay
