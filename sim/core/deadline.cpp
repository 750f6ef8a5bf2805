#include "core/deadline.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace shardsim {

std::string Deadline::message(std::string_view what) const {
  return fmt::format(
      "the simulation ran past its wall-time budget (simulation.max_wall_time = {:g} s): stopped after {:.1f} s {}; raise "
      "simulation.max_wall_time, or simulate fewer ranks, layers or steps",
      budget_s_, elapsed(), what);
}

void Deadline::check(std::string_view what) const {
  if (passed()) throw RuntimeError(message(what));
}

}  // namespace shardsim
