#include "core/registry.hpp"

#include <fmt/format.h>

#include "core/reader.hpp"

namespace shardsim {

std::string unknown_name_message(std::string_view what, std::string_view name, std::span<const std::string_view> names) {
  std::string message = fmt::format("unknown {} {}; expected one of {}", what, quote(name), join(names));
  if (auto g = closest_match(name, names); !g.empty()) message += fmt::format(" (did you mean \"{}\"?)", g);
  return message;
}

}  // namespace shardsim
