// Built when CMake did not find MPI: a sweep started by mpirun refuses to run (otherwise every
// rank would run the whole sweep into the same files).
#include "core/error.hpp"
#include "sweep/distributed.hpp"

namespace shardsim::sweep {

bool mpi_built() {
  return false;
}

std::optional<DistributedOutcome> run_sweep_mpi(const SweepSpec&, int, const PointFunction&, SweepObserver*) {
  throw RuntimeError(
      "this shardsim was built without MPI (CMake found none; on Debian: apt-get install libopenmpi-dev, then reconfigure); "
      "run the sweep without mpirun, or split it across machines with --shard I/N");
}

}  // namespace shardsim::sweep
