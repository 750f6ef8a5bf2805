// The implementations of one replaceable part (collective algorithms, wrap policies, fabric
// kinds, compute models, step builders), registered by name with an explicit
// register_builtin_...() call and picked by the name a YAML file gives. Every unknown name gets
// the same message: what kind of thing, the valid names, and the likeliest typo.
//
//   Registry<WrapPolicyInfo> policies("wrap policy");
//   register_builtin_wrap_policies(policies);
//   const WrapPolicyInfo& p = policies.get(choice.name, choice.where, "fsdp.wrap.policy");
//
// An entry is a struct with a `name` member (std::string_view or std::string) or a pointer to an
// object with a name() method. Entries keep the order they were added in (a tuner that tries
// them in turn keeps that order).
#pragma once

#include <cassert>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace shardsim {

// "unknown wrap policy "x"; expected one of module, size, none (did you mean "none"?)"
[[nodiscard]] std::string unknown_name_message(std::string_view what, std::string_view name, std::span<const std::string_view> names);

template <class Entry>
class Registry {
 public:
  explicit Registry(std::string_view what) : what_(what) {}

  void add(Entry entry) {
    assert(find(name_of(entry)) == nullptr && "two entries with one name");
    entries_.push_back(std::move(entry));
  }

  // nullptr when nothing has that name.
  [[nodiscard]] const Entry* find(std::string_view name) const {
    for (const auto& e : entries_) {
      if (name_of(e) == name) return &e;
    }
    return nullptr;
  }

  // The entry named `name`; otherwise throws ConfigError at `where` / `key_path` listing the
  // valid names, `also_valid` first (names the caller accepts besides the entries, e.g. "auto").
  [[nodiscard]] const Entry& get(std::string_view name, const Location& where, const std::string& key_path,
                                 std::span<const std::string_view> also_valid = {}) const {
    if (const Entry* e = find(name)) return *e;
    std::vector<std::string_view> valid(also_valid.begin(), also_valid.end());
    for (auto n : names()) valid.push_back(n);
    throw ConfigError(where, key_path, unknown_name_message(what_, name, valid));
  }

  [[nodiscard]] std::vector<std::string_view> names() const {
    std::vector<std::string_view> out;
    out.reserve(entries_.size());
    for (const auto& e : entries_) out.push_back(name_of(e));
    return out;
  }
  [[nodiscard]] const std::vector<Entry>& all() const { return entries_; }
  [[nodiscard]] std::string_view what() const { return what_; }

 private:
  static std::string_view name_of(const Entry& e) {
    if constexpr (requires { e->name(); }) {
      return e->name();
    } else {
      return e.name;
    }
  }

  std::string_view what_;
  std::vector<Entry> entries_;
};

}  // namespace shardsim
