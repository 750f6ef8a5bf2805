// The built-in wrap policies.
#include <fmt/format.h>

#include <array>
#include <set>

#include "fsdp/wrap_policy.hpp"
#include "model/transformer.hpp"

namespace shardsim::fsdp {
namespace {

std::string child_path(const std::string& prefix, const model::Module& c) {
  return prefix.empty() ? c.name : prefix + "." + c.name;
}

// ModuleWrapPolicy({cls}): every module of the class becomes a unit. `block` names the model's
// transformer block class whatever it is called; blocks_per_unit > 1 groups consecutive blocks
// into one unit (as wrapping a container of them would).
// With outer_units (`outer_modules: units`), the modules the blocks leave to the root become units
// too, as torchtitan's apply_fsdp wraps them since #1094 (2025-07): those before the first block
// (the token embedding) one unit, those after the last (final norm and output head) another, or,
// when the head computes with the embedding's weight, all of them one unit (torchtitan's
// enable_weight_tying branch, so that the tied weight is gathered once).
class ModulePolicy final : public WrapPolicy {
 public:
  ModulePolicy(std::string module_class, std::int64_t blocks_per_unit, bool outer_units)
      : class_(std::move(module_class)), group_(blocks_per_unit), outer_units_(outer_units) {}

  std::vector<std::vector<std::string>> select(const model::Module& root) const override {
    std::vector<std::vector<std::string>> out;
    visit(root, "", out);
    if (outer_units_) add_outer_units(root, out);
    return out;
  }

 private:
  bool matches(const model::Module& m) const { return class_ == "block" ? m.is_block : m.type == class_; }

  void visit(const model::Module& m, const std::string& prefix, std::vector<std::vector<std::string>>& out) const {
    std::vector<std::string> run;  // consecutive matching blocks being grouped
    auto flush = [&] {
      if (!run.empty()) out.push_back(run);
      run.clear();
    };
    for (const auto& c : m.children) {
      const std::string path = child_path(prefix, c);
      if (matches(c)) {
        if (group_ == 1) {
          out.push_back({path});
        } else {
          run.push_back(path);
          if (static_cast<std::int64_t>(run.size()) == group_) flush();
        }
        // Matching modules nested inside a matching module become nested units too.
        std::vector<std::vector<std::string>> nested;
        visit(c, path, nested);
        out.insert(out.end(), nested.begin(), nested.end());
      } else {
        flush();
        visit(c, path, out);
      }
    }
    flush();
  }

  // The root's children that own parameters and hold no block, before and after the blocks.
  static void add_outer_units(const model::Module& root, std::vector<std::vector<std::string>>& out) {
    std::vector<std::string> before;
    std::vector<std::string> after;
    bool tied = false;
    bool seen_block = false;
    for (const auto& c : root.children) {
      if (contains_block(c)) {
        seen_block = true;
        continue;
      }
      if (c.numel() == 0 && !c.tied_weight) continue;  // the loss: nothing to shard
      tied = tied || c.tied_weight;
      (seen_block ? after : before).push_back(c.name);
    }
    if (!seen_block) return;
    if (tied) {
      before.insert(before.end(), after.begin(), after.end());
      after.clear();
    }
    if (!before.empty()) out.insert(out.begin(), before);
    if (!after.empty()) out.push_back(after);
  }

  static bool contains_block(const model::Module& m) {
    if (m.is_block) return true;
    return std::any_of(m.children.begin(), m.children.end(), [](const model::Module& c) { return contains_block(c); });
  }

  std::string class_;
  std::int64_t group_;
  bool outer_units_;
};

// size_based_auto_wrap_policy(min_num_params) with FSDP1's _recursive_wrap: recurse into a module
// iff its not-yet-wrapped numel >= min and it is not nn.MultiheadAttention (a forced leaf); wrap
// it iff the remainder after its children's units is >= min and it is not a ModuleList or
// ModuleDict; the root is never wrapped by the policy (it is the outer FSDP).
class SizePolicy final : public WrapPolicy {
 public:
  explicit SizePolicy(std::int64_t min_params) : min_(min_params) {}

  std::vector<std::vector<std::string>> select(const model::Module& root) const override {
    std::vector<std::vector<std::string>> out;
    (void)recursive_wrap(root, "", true, out);
    return out;
  }

 private:
  // Returns the numel wrapped in this subtree.
  std::int64_t recursive_wrap(const model::Module& m, const std::string& path, bool only_children,
                              std::vector<std::vector<std::string>>& out) const {
    const std::int64_t nonwrapped = m.numel();
    const bool recurse = nonwrapped >= min_ && m.type != "MultiheadAttention";
    if (!recurse) return 0;
    std::int64_t wrapped = 0;
    const std::size_t mark = out.size();
    for (const auto& c : m.children) wrapped += recursive_wrap(c, child_path(path, c), false, out);
    const std::int64_t remainder = nonwrapped - wrapped;
    const bool excluded = m.type == "ModuleList" || m.type == "ModuleDict";
    if (!only_children && remainder >= min_ && !excluded) {
      // Post-order in PyTorch; listed here before its nested units so the order is forward order.
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(mark), std::vector<std::string>{path});
      return nonwrapped;
    }
    return wrapped;
  }

  std::int64_t min_;
};

class NonePolicy final : public WrapPolicy {
 public:
  std::vector<std::vector<std::string>> select(const model::Module&) const override { return {}; }
};

constexpr std::array<std::string_view, 2> kOuterModuleNames{"root", "units"};
constexpr std::array kModuleParams{
    ParamSpec{"policy", "module", "", "ModuleWrapPolicy: wrap every module of a class"},
    ParamSpec{"module", "block | class name", "block", "class to wrap; block = the transformer block"},
    ParamSpec{"blocks_per_unit", "integer", "1", "consecutive blocks per unit (module: block only)", Range{1, 1 << 20}},
    ParamSpec{"outer_modules",
              "",
              "root",
              "module: block, FSDP2: the modules outside the blocks stay in the root unit (root), or the ones before the "
              "blocks become one unit and the ones after another (units: torchtitan since #1094, 2025-07)",
              {},
              kOuterModuleNames},
};
constexpr std::array kSizeParams{
    ParamSpec{"policy", "size", "", "size_based_auto_wrap_policy"},
    ParamSpec{"min_params", "integer", "100000000", "min_num_params: smallest unit (the recursive rule)",
              Range{1, static_cast<double>(std::int64_t{1} << 50)}},
};
constexpr std::array kNoneParams{
    ParamSpec{"policy", "none", "", "no auto-wrap: the whole model is one unit"},
};

std::vector<std::string_view> module_classes(const model::Module& root, std::set<std::string>& storage) {
  model::for_each_module(root, "", [&](const model::Module& m, const std::string&) { storage.insert(m.type); });
  std::vector<std::string_view> out{"block"};
  for (const auto& s : storage) out.emplace_back(s);
  return out;
}

std::int64_t count_blocks(const model::Module& root) {
  std::int64_t n = 0;
  model::for_each_module(root, "", [&](const model::Module& m, const std::string&) { n += m.is_block ? 1 : 0; });
  return n;
}

}  // namespace

void register_builtin_wrap_policies(WrapPolicyRegistry& registry) {
  registry.add(WrapPolicyInfo{"module", Schema{"wrap policy module", "wrap by module class", kModuleParams},
                              [](const Reader& r, const model::Module& root) -> std::unique_ptr<WrapPolicy> {
                                const std::string cls = r.text("module");
                                std::set<std::string> storage;
                                const auto classes = module_classes(root, storage);
                                if (std::find(classes.begin(), classes.end(), cls) == classes.end()) {
                                  std::string message =
                                      fmt::format("no module of class \"{}\" in this model; expected one of {}", cls, join(classes));
                                  if (auto g = closest_match(cls, classes); !g.empty())
                                    message = fmt::format("no module of class \"{}\" in this model (did you mean \"{}\"?)", cls, g);
                                  r.fail("module", message);
                                }
                                const std::int64_t group = r.integer("blocks_per_unit");
                                if (group > 1 && cls != "block") r.fail("blocks_per_unit", "only applies with module: block");
                                // More than the model has is not a grouping but a typo (64 for 4?).
                                if (const std::int64_t blocks = count_blocks(root); group > 1 && group > blocks) {
                                  r.fail("blocks_per_unit", fmt::format("expected at most the model's {} blocks; got {}", blocks, group));
                                }
                                const bool outer_units = r.choice("outer_modules") == "units";
                                if (outer_units && cls != "block") r.fail("outer_modules", "only applies with module: block");
                                return std::make_unique<ModulePolicy>(cls, group, outer_units);
                              }});
  registry.add(WrapPolicyInfo{"size", Schema{"wrap policy size", "wrap by parameter count", kSizeParams},
                              [](const Reader& r, const model::Module&) -> std::unique_ptr<WrapPolicy> {
                                return std::make_unique<SizePolicy>(r.integer("min_params"));
                              }});
  registry.add(
      WrapPolicyInfo{"none", Schema{"wrap policy none", "one unit for the whole model", kNoneParams},
                     [](const Reader&, const model::Module&) -> std::unique_ptr<WrapPolicy> { return std::make_unique<NonePolicy>(); }});
}

}  // namespace shardsim::fsdp
