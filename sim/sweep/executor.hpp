// Where points run. SimGrid allows one engine per process, so every point is simulated in a
// process of its own: a WorkerPool forks one child per point; a ForkServer keeps that pool in a
// helper process started before MPI; the MPI coordinator spreads points over ranks. The sweep
// driver sees only this interface.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "sweep/grid.hpp"
#include "sweep/result.hpp"

namespace shardsim::sweep {

// Simulates one point and returns its summary (report::summary_json's object). Runs in a child
// process; a ConfigError or RuntimeError it throws becomes the point's recorded error.
using PointFunction = std::function<nlohmann::json(const Point&)>;

class Executor {
 public:
  virtual ~Executor() = default;
  Executor() = default;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // How many points may be running at once.
  [[nodiscard]] virtual int capacity() const = 0;
  // Starts a point; requires fewer than capacity() submitted and not yet returned by wait().
  virtual void submit(const Point& p) = 0;
  // Blocks until at least one submitted point has finished and returns all that have. Requires
  // at least one point running.
  [[nodiscard]] virtual std::vector<PointResult> wait() = 0;
};

}  // namespace shardsim::sweep
