#include "sweep/objective.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "core/args.hpp"

namespace shardsim::sweep {

double Objective::value(const PointResult& r) const {
  switch (kind_) {
    case Kind::throughput:
      return r.number("tokens_per_s_per_gpu");
    case Kind::step_time:
      return r.number("step_time_s");
    case Kind::time_to_tokens: {
      const double rate = r.number("tokens_per_s_per_gpu") * r.number("world_size");
      return rate > 0 ? token_budget_ / rate : std::numeric_limits<double>::quiet_NaN();
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::string Objective::name() const {
  switch (kind_) {
    case Kind::throughput:
      return "tokens/s per GPU";
    case Kind::step_time:
      return "step time";
    case Kind::time_to_tokens:
      return fmt::format("time to {:g} tokens", token_budget_);
  }
  return "";
}

std::string Objective::format(double v) const {
  if (!std::isfinite(v)) return "-";
  switch (kind_) {
    case Kind::throughput:
      return fmt::format("{:.0f} tokens/s", v);
    case Kind::step_time:
      return fmt::format("{:#.4g} s", v);
    case Kind::time_to_tokens:
      if (v >= 2 * 86400) return fmt::format("{:.3g} days", v / 86400);
      if (v >= 2 * 3600) return fmt::format("{:.3g} h", v / 3600);
      return fmt::format("{:#.4g} s", v);
  }
  return "";
}

std::string Objective::option() const {
  switch (kind_) {
    case Kind::throughput:
      return "throughput";
    case Kind::step_time:
      return "step_time";
    case Kind::time_to_tokens:
      return fmt::format("time_to_tokens:{:g}", token_budget_);
  }
  return "";
}

Objective parse_objective(std::string_view text) {
  constexpr std::string_view kValid = "throughput, step_time, time_to_tokens:N (N tokens, e.g. time_to_tokens:1e12)";
  if (text == "throughput") return {Objective::Kind::throughput, 0};
  if (text == "step_time") return {Objective::Kind::step_time, 0};
  if (text.rfind("time_to_tokens:", 0) == 0) {
    const std::string_view n = text.substr(std::string_view("time_to_tokens:").size());
    double v = 0;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (ec == std::errc() && end == n.data() + n.size() && std::isfinite(v) && v >= 1) return {Objective::Kind::time_to_tokens, v};
    throw UsageError(fmt::format("--objective: expected a token count of at least 1 after time_to_tokens:; got \"{}\"", n));
  }
  throw UsageError(fmt::format("--objective: expected one of {}; got \"{}\"", kValid, text));
}

}  // namespace shardsim::sweep
