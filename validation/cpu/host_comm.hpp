// Collectives between CPU processes for the CPU backend: MPI when it is found (mpi_comm.hpp),
// otherwise one rank only (local_comm.hpp).
//
// Contract: split() is collective over all ranks and called from one thread; run() may be called
// concurrently from several threads for different communicators, and blocks until the collective
// completed on this rank.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "graph/op.hpp"

namespace shardsim::replay {

class HostComm {
 public:
  virtual ~HostComm() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int world() const = 0;
  // A communicator of the ranks passing the same color, ordered by key; returns its id. A
  // negative color joins none (the id is not to be used).
  virtual int split(int color, int key) = 0;
  // A collective of total size `bytes` (all-gather output, reduce-scatter input, all-reduce
  // buffer) on communicator `comm`, or a send (from the first of its two members to the second);
  // buffer offset `slot` (microbenchmarks). Throws RuntimeError.
  virtual void run(int comm, graph::OpKind kind, std::size_t bytes, int slot) = 0;
  // A ring's step on communicator `comm`: `bytes` to the member `shift` places after this one,
  // as many from the one `shift` places before. Blocks until both completed.
  virtual void shift(int comm, std::size_t bytes, int shift) = 0;
  // Every rank's values, in rank order.
  [[nodiscard]] virtual std::vector<double> all_gather(std::span<const double> values) = 0;
  virtual void abort() noexcept = 0;
};

}  // namespace shardsim::replay
