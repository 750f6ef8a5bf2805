// What a sweep ranks points by (`--objective`): the heatmap's colour and best cell, the Pareto
// frontier's axis, the best-settings table and `shardsim tune`'s choice all follow it, and each
// picture says which it is.
//   throughput            tokens/s per GPU, higher is better (the default)
//   step_time             seconds per optimizer step, lower is better
//   time_to_tokens:N      wall time to train on N tokens with the whole job, lower is better:
//                         N / (tokens/s per GPU x GPUs), the one to use when the GPU count varies
//
//   const Objective o = parse_objective("time_to_tokens:1e12");
//   if (o.better(o.value(a), o.value(b))) ...
#pragma once

#include <string>
#include <string_view>

#include "sweep/result.hpp"

namespace shardsim::sweep {

class Objective {
 public:
  enum class Kind { throughput, step_time, time_to_tokens };

  Objective() = default;
  Objective(Kind kind, double token_budget) : kind_(kind), token_budget_(token_budget) {}

  [[nodiscard]] Kind kind() const { return kind_; }
  // NaN when the point has no such figure (failed).
  [[nodiscard]] double value(const PointResult& r) const;
  [[nodiscard]] bool higher_is_better() const { return kind_ == Kind::throughput; }
  // Whether `a` is strictly better than `b`.
  [[nodiscard]] bool better(double a, double b) const { return higher_is_better() ? a > b : a < b; }
  // "tokens/s per GPU", "step time", "time to 1e+12 tokens"
  [[nodiscard]] std::string name() const;
  // A value for a cell or a table: "5537 tokens/s", "2.959 s", "12.3 h".
  [[nodiscard]] std::string format(double v) const;
  // As written on the command line: "throughput", "step_time", "time_to_tokens:1e+12".
  [[nodiscard]] std::string option() const;

 private:
  Kind kind_ = Kind::throughput;
  double token_budget_ = 0;
};

// Throws UsageError naming the valid objectives.
[[nodiscard]] Objective parse_objective(std::string_view text);

}  // namespace shardsim::sweep
