// The declaration of one setting: name, type, default and meaning, written once next to the code
// that reads it. The Reader uses it for defaults and to reject unknown keys; `shardsim describe`
// prints it.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace shardsim {

struct ParamSpec {
  std::string_view name;
  std::string_view type;           // for people: "integer >= 1", "pre | post | none", "bandwidth"
  std::string_view default_value;  // parsed like user input; empty: required (or optional, see Reader)
  std::string_view description;
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
