// Collectives between CPU processes through MPI (OpenMPI from Debian), one process per rank
// started by mpirun. Needs MPI_THREAD_MULTIPLE: each replay stream is a thread, and streams run
// collectives concurrently on their own communicators (as PyTorch process groups do).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cpu/host_comm.hpp"

namespace shardsim::replay {

class MpiComm final : public HostComm {
 public:
  // Initialises MPI; throws RuntimeError if it cannot give MPI_THREAD_MULTIPLE.
  MpiComm();
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int world() const override { return world_; }
  int split(int color, int key) override;
  void run(int comm, graph::OpKind kind, std::size_t bytes, int slot) override;
  void shift(int comm, std::size_t bytes, int shift) override;
  [[nodiscard]] std::vector<double> all_gather(std::span<const double> values) override;
  void abort() noexcept override;

  // Whether this process was started by mpirun (so MPI can reach the other ranks).
  [[nodiscard]] static bool launched_by_mpirun();

 private:
  struct Comm;
  Comm& at(int comm);  // communicator `comm` (split() may add others meanwhile)
  int rank_ = 0;
  int world_ = 1;
  std::mutex mutex_;
  std::map<int, std::unique_ptr<Comm>> comms_;
};

}  // namespace shardsim::replay
