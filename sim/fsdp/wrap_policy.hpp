// Wrap policies choose which modules become FSDP units (FSDP1's auto_wrap_policy, or where
// fully_shard is called for FSDP2). Built-ins: module (by class, optionally grouping consecutive
// blocks), size (size_based_auto_wrap_policy's recursive rule), none (one unit).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/choice.hpp"
#include "core/param_spec.hpp"
#include "core/reader.hpp"
#include "core/registry.hpp"
#include "model/module.hpp"

namespace shardsim::fsdp {

// Contract: select() returns groups of dotted module paths in forward (pre-)order; each group
// becomes one unit and holds every parameter under its modules that no nested unit takes. The
// root module is never returned: it is always a unit, holding what no other unit takes.
class WrapPolicy {
 public:
  virtual ~WrapPolicy() = default;
  [[nodiscard]] virtual std::vector<std::vector<std::string>> select(const model::Module& root) const = 0;
};

struct WrapPolicyInfo {
  std::string_view name;
  Schema schema;  // settings, next to the policy's name key
  // Reads the policy's settings (checked against schema) and builds it for this model.
  std::function<std::unique_ptr<WrapPolicy>(const Reader& settings, const model::Module& root)> create;
};

class WrapPolicyRegistry : public Registry<WrapPolicyInfo> {
 public:
  WrapPolicyRegistry() : Registry("wrap policy") {}
  // Builds the policy named by `choice`; unknown names and bad settings throw ConfigError.
  [[nodiscard]] std::unique_ptr<WrapPolicy> create(const config::Choice& choice, const model::Module& root) const;
};

void register_builtin_wrap_policies(WrapPolicyRegistry& registry);

}  // namespace shardsim::fsdp
