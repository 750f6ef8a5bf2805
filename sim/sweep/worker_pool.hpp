// Runs points in forked child processes, up to `jobs` at a time. Each child simulates one point
// with the PointFunction, sends its summary (or its error) back over a pipe as JSON and exits;
// a child that crashes or is killed is recorded as a failed point naming the signal.
//
// Fork from a single-threaded process only (before MPI_Init: see fork_server.hpp). Children die
// with their parent (PR_SET_PDEATHSIG), so killing a sweep leaves no simulation running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "sweep/executor.hpp"

namespace shardsim::sweep {

class WorkerPool final : public Executor {
 public:
  WorkerPool(int jobs, PointFunction fn);
  ~WorkerPool() override;  // kills and reaps children still running

  [[nodiscard]] int capacity() const override { return jobs_; }
  void submit(const Point& p) override;
  [[nodiscard]] std::vector<PointResult> wait() override;

  // Waits up to `timeout` (forever when negative) for children to finish, or for `also_fd` to
  // become readable when it is >= 0; returns the points that finished (possibly none).
  [[nodiscard]] std::vector<PointResult> wait_for(std::chrono::milliseconds timeout, int also_fd = -1);
  [[nodiscard]] int running() const { return static_cast<int>(workers_.size()); }

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;  // read end of the child's result pipe
    Point point;
    std::string received;
    bool eof = false;
  };

  [[nodiscard]] static PointResult reap(Worker& w);

  int jobs_;
  PointFunction fn_;
  std::vector<Worker> workers_;
};

// Runs the point function and turns its outcome into the JSON a child sends back. Exposed for
// tests; in the pool it runs in the child.
[[nodiscard]] std::string run_point_reply(const PointFunction& fn, const Point& p);

// The number of CPUs this process may run on (sched_getaffinity), at least 1.
[[nodiscard]] int available_cpus();

}  // namespace shardsim::sweep
