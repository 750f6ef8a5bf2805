// A sweep over MPI ranks: `mpirun -n K shardsim sweep ...`. Rank 0 reads and writes the results
// directory and hands points out one at a time to whichever rank has a free worker (itself
// included), so fast and slow points balance out; every rank runs its points in worker
// processes of a ForkServer forked before MPI_Init (fork_server.hpp says why). Results travel to
// rank 0 as results.jsonl lines and are written exactly as a local sweep writes them, so the
// sorted files are byte-identical to a local run's.
//
// MPI support is built when CMake finds MPI (Debian: libopenmpi-dev); without it, a sweep
// started by mpirun stops with an error instead of running K copies of the same sweep.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "sweep/driver.hpp"
#include "sweep/executor.hpp"

namespace shardsim::sweep {

// True when the environment says an MPI launcher (mpirun, srun) started this process.
[[nodiscard]] bool started_by_mpi();
// Ranks the launcher started on this node (OpenMPI's OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's
// MPI_LOCALNRANKS, Slurm's SLURM_NTASKS_PER_NODE); 1 when it does not say.
[[nodiscard]] int local_ranks();
// Whether this build has MPI support.
[[nodiscard]] bool mpi_built();

struct DistributedOutcome {
  SweepOutcome outcome;
  std::vector<std::size_t> points_per_rank;  // points each rank ran
};

// Runs the sweep across the MPI job, `jobs` workers per rank. Returns the outcome on rank 0 and
// nullopt on the others; `observer` is used on rank 0 only. Throws what run_sweep throws (on
// rank 0, after telling the other ranks to stop), and RuntimeError when built without MPI.
[[nodiscard]] std::optional<DistributedOutcome> run_sweep_mpi(const SweepSpec& spec, int jobs, const PointFunction& fn,
                                                              SweepObserver* observer);

}  // namespace shardsim::sweep
