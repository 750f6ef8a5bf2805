#include "core/param_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace shardsim {

const ParamSpec* Schema::find(std::string_view key) const {
  auto it = std::find_if(params.begin(), params.end(), [&](const ParamSpec& p) { return p.name == key; });
  return it == params.end() ? nullptr : &*it;
}

std::string Range::text() const {
  if (!dimension) {
    // Integral bounds in full (1048576, not 1.04858e+06).
    auto number = [](double v) { return v == std::floor(v) && std::fabs(v) < 1e16 ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v); };
    return fmt::format("{}..{}", number(min), number(max));
  }
  return fmt::format("{}..{}", format_quantity(min, *dimension), format_quantity(max, *dimension));
}

std::string ParamSpec::type_text() const {
  if (!choices.empty()) {
    std::string out;
    for (auto c : choices) out += fmt::format("{}{}", out.empty() ? "" : " | ", c);
    return out;
  }
  if (!range) return std::string(type);
  return fmt::format("{} {}", type, range->text());
}

std::string render_schema(const Schema& schema) {
  std::size_t name_w = 4;
  std::size_t type_w = 4;
  std::size_t def_w = 7;
  for (const auto& p : schema.params) {
    name_w = std::max(name_w, p.name.size());
    type_w = std::max(type_w, p.type_text().size());
    def_w = std::max(def_w, p.default_value.size());
  }
  std::string out = fmt::format("{}: {}\n\n", schema.name, schema.description);
  out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {}\n", "key", name_w, "type", type_w, "default", def_w, "meaning");
  for (const auto& p : schema.params) {
    out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {}\n", p.name, name_w, p.type_text(), type_w, p.default_value.empty() ? "-" : p.default_value,
                       def_w, p.description);
  }
  return out;
}

}  // namespace shardsim
