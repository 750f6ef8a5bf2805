// One wall-clock budget for a whole run (simulation.max_wall_time): loading, building the graph,
// simulating and summarising all count, from the moment the command started. Each phase checks
// it where it loops, so that no phase can run on past it.
//
//   const Deadline deadline(started, 20.0);
//   for (...) { if (++n % 4096 == 0) deadline.check("summarising the memory of rank 3"); ... }
#pragma once

#include <chrono>
#include <limits>
#include <string>
#include <string_view>

namespace shardsim {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  Deadline() = default;  // no budget: never passes
  Deadline(Clock::time_point start, double budget_s) : start_(start), budget_s_(budget_s) {}

  [[nodiscard]] double budget() const { return budget_s_; }
  [[nodiscard]] double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  [[nodiscard]] bool passed() const { return budget_s_ < std::numeric_limits<double>::infinity() && elapsed() > budget_s_; }

  // "the run went past its wall-time budget (simulation.max_wall_time = 20 s): stopped after
  // 20.3 s while WHAT; raise simulation.max_wall_time, or simulate fewer ranks, layers or steps"
  [[nodiscard]] std::string message(std::string_view what) const;
  // Throws RuntimeError with message(what) once the budget is spent.
  void check(std::string_view what) const;

 private:
  Clock::time_point start_ = Clock::now();
  double budget_s_ = std::numeric_limits<double>::infinity();
};

}  // namespace shardsim
