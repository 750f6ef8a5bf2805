#include "fsdp/wrap_policy.hpp"

#include <fmt/format.h>

namespace shardsim::fsdp {

void WrapPolicyRegistry::add(WrapPolicyInfo info) {
  infos_.push_back(std::move(info));
}

std::unique_ptr<WrapPolicy> WrapPolicyRegistry::create(const config::Choice& choice, const model::Module& root) const {
  std::vector<std::string_view> names;
  for (const auto& info : infos_) {
    if (info.name == choice.name) {
      Reader r(choice.settings, choice.path, info.schema);
      r.finish();  // first: a misspelt setting is reported as such, not as the default it left in place
      return info.create(r, root);
    }
    names.push_back(info.name);
  }
  std::string message = fmt::format("unknown wrap policy \"{}\"; expected one of {}", choice.name, join(names));
  if (auto g = closest_match(choice.name, names); !g.empty()) message += fmt::format(" (did you mean \"{}\"?)", g);
  throw ConfigError(choice.where, choice.path + ".policy", message);
}

}  // namespace shardsim::fsdp
