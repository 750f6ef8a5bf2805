// A WorkerPool kept in a helper process forked early, while the process is still
// single-threaded. MPI libraries start threads and register memory in MPI_Init, and forking
// after that is unsafe with some transports (OpenMPI's openib, for one); so an MPI rank forks
// this server first and then only talks to it over two pipes: point indices in, result lines
// (results.jsonl format) out. The server never calls MPI.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "sweep/executor.hpp"

namespace shardsim::sweep {

class ForkServer final : public Executor {
 public:
  // Forks the server now. It may be asked to run any of `points`, by index.
  ForkServer(const std::vector<Point>& points, int jobs, const PointFunction& fn);
  ~ForkServer() override;  // stops the server and its workers, and reaps it

  [[nodiscard]] int capacity() const override { return jobs_; }
  void submit(const Point& p) override;
  [[nodiscard]] std::vector<PointResult> wait() override;

  // Waits up to `timeout` for results; returns those that arrived (possibly none). Throws
  // RuntimeError if the server has died.
  [[nodiscard]] std::vector<PointResult> wait_for(std::chrono::milliseconds timeout);
  [[nodiscard]] int running() const { return running_; }

 private:
  pid_t pid_ = -1;
  int to_server_ = -1;
  int from_server_ = -1;
  std::string received_;
  int jobs_;
  int running_ = 0;
};

}  // namespace shardsim::sweep
