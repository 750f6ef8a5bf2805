#include "core/param_spec.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace shardsim {

const ParamSpec* Schema::find(std::string_view key) const {
  auto it = std::find_if(params.begin(), params.end(), [&](const ParamSpec& p) { return p.name == key; });
  return it == params.end() ? nullptr : &*it;
}

std::string render_schema(const Schema& schema) {
  std::size_t name_w = 4;
  std::size_t type_w = 4;
  std::size_t def_w = 7;
  for (const auto& p : schema.params) {
    name_w = std::max(name_w, p.name.size());
    type_w = std::max(type_w, p.type.size());
    def_w = std::max(def_w, p.default_value.size());
  }
  std::string out = fmt::format("{}: {}\n\n", schema.name, schema.description);
  out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {}\n", "key", name_w, "type", type_w, "default", def_w, "meaning");
  for (const auto& p : schema.params) {
    out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {}\n", p.name, name_w, p.type, type_w, p.default_value.empty() ? "-" : p.default_value,
                       def_w, p.description);
  }
  return out;
}

}  // namespace shardsim
