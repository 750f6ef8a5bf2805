// What a running sweep shows: a first line
//   sweep: 100 points to run (20 already done), -j 2
// then, on a terminal, one progress bar redrawn in place
//   [##########----------] 37/100  2 failed  1.3 points/s  ETA 0:48
// elsewhere (a log, CI), one plain line per finished point
//   [37/100] fsdp.backward_prefetch=pre fsdp.wrap.blocks_per_unit=2: 2.946 s, 5561 tokens/s/GPU, 68.8 GiB (ETA 0:48)
// with the warnings of settings that did not apply to it under it, each warning the first time
// only ("1 warning as above" after); at the end, on a terminal or where a warning came again, each
// warning once with the number of points that gave it (results.jsonl keeps every point's).
#pragma once

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sweep/driver.hpp"

namespace shardsim::sweep {

class Progress final : public SweepObserver {
 public:
  // `how` ends the first line: "-j 2", "2 MPI ranks x -j 1".
  Progress(std::FILE* out, bool terminal, std::string how);

  void started(std::size_t to_run, std::size_t already_done) override;
  void finished(const PointResult& r) override;
  void ended() override;

 private:
  std::FILE* out_;
  bool terminal_;
  std::string how_;
  std::size_t total_ = 0;
  std::size_t done_ = 0;
  std::size_t failed_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::pair<std::string, std::size_t>> warnings_;  // each warning, and how many points gave it
  bool repeated_ = false;                                      // a point gave a warning already shown
};

// Seconds left when `done` of `total` points took `elapsed` seconds, at the same rate; nullopt
// before the first point has finished.
[[nodiscard]] std::optional<double> eta_seconds(std::size_t done, std::size_t total, double elapsed);

// "0:48", "12:05", "2:03:04".
[[nodiscard]] std::string format_duration(double seconds);

// One line about a finished point: its settings and its figures, or its error, and under it the
// warnings of settings that did not apply to it. With `shown`, a warning in it is not repeated
// (the line counts such warnings instead) and a new one is added to it.
[[nodiscard]] std::string describe_result(const PointResult& r, std::vector<std::string>* shown = nullptr);

// The warnings of a point's settings that did not apply to it (results.jsonl's "warnings").
[[nodiscard]] std::vector<std::string> point_warnings(const PointResult& r);

}  // namespace shardsim::sweep
