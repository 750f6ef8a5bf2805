// Launcher detection, built with or without MPI: see distributed.hpp.
#include <array>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "sweep/distributed.hpp"

namespace shardsim::sweep {

bool started_by_mpi() {
  // OpenMPI's mpirun, PMIx launchers (OpenMPI 5, Slurm), PMI-1/2 launchers (MPICH's hydra, srun).
  constexpr std::array<const char*, 4> kVars{"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
  for (const char* v : kVars) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

int local_ranks() {
  constexpr std::array<const char*, 3> kVars{"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"};
  for (const char* v : kVars) {
    const char* s = std::getenv(v);
    if (s == nullptr) continue;
    int n = 0;
    const std::string_view text(s);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec == std::errc{} && n > 0) return n;
  }
  return 1;
}

}  // namespace shardsim::sweep
