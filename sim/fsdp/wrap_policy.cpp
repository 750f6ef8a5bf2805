#include "fsdp/wrap_policy.hpp"

namespace shardsim::fsdp {

std::unique_ptr<WrapPolicy> WrapPolicyRegistry::create(const config::Choice& choice, const model::Module& root) const {
  const WrapPolicyInfo& info = get(choice.name, choice.where, choice.path + ".policy");
  Reader r(choice.settings, choice.path, info.schema);
  r.finish();  // first: a misspelt setting is reported as such, not as the default it left in place
  return info.create(r, root);
}

}  // namespace shardsim::fsdp
