// The declaration of one setting: name, type, default and meaning, written once next to the code
// that reads it. The Reader uses it for defaults and to reject unknown keys; `shardsim describe`
// prints it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/units.hpp"

namespace shardsim {

// The values a numeric setting may take, inclusive; for a quantity, in the base unit of its
// dimension (seconds, bytes, bytes/s, FLOP/s).
struct Range {
  double min = 0;
  double max = 0;
  std::optional<Dimension> dimension = std::nullopt;
  [[nodiscard]] std::string text() const;  // "1 ms..1 s", "1..1024"
};

// Declared once, next to the code that reads it: the Reader takes the default, the bounds and the
// choices from here, and `shardsim describe` prints the same.
struct ParamSpec {
  std::string_view name;
  std::string_view type;           // for people: "integer", "bandwidth", "mapping {param, reduce}"
  std::string_view default_value;  // parsed like user input; empty: required; "-": optional
  std::string_view description;
  std::optional<Range> range = std::nullopt;        // numbers and quantities
  std::span<const std::string_view> choices = {};  // a choice among names

  // The type with its bounds or choices: "integer 1..1024", "pre | post | none".
  [[nodiscard]] std::string type_text() const;
};

// A named group of settings, e.g. the keys of `fsdp:` or of one wrap policy.
struct Schema {
  std::string_view name;
  std::string_view description;
  std::span<const ParamSpec> params;

  [[nodiscard]] const ParamSpec* find(std::string_view key) const;
};

// Renders a schema as an aligned text table (for `shardsim describe`).
[[nodiscard]] std::string render_schema(const Schema& schema);

}  // namespace shardsim
