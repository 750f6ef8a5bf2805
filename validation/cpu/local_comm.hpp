// One rank, no MPI: a collective over one rank copies its buffer, as NCCL does with one rank.
#pragma once

#include <map>
#include <mutex>
#include <vector>

#include "cpu/host_comm.hpp"

namespace shardsim::replay {

class LocalComm final : public HostComm {
 public:
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int world() const override { return 1; }
  int split(int color, int key) override;
  void run(int comm, graph::OpKind kind, std::size_t bytes, int slot) override;
  void shift(int comm, std::size_t bytes, int /*shift*/) override { run(comm, graph::OpKind::send, bytes, 0); }
  [[nodiscard]] std::vector<double> all_gather(std::span<const double> values) override;
  void abort() noexcept override {}

 private:
  std::mutex mutex_;
  std::map<int, std::vector<char>> buffers_;  // per communicator: concurrent streams do not share
  int next_ = 0;
};

}  // namespace shardsim::replay
