#include "core/args.hpp"

#include <fmt/format.h>

#include "core/reader.hpp"

namespace shardsim {

Args& Args::flag(std::string name, std::string help) {
  order_.push_back(name);
  specs_[std::move(name)] = Spec{Kind::flag, "", std::move(help)};
  return *this;
}

Args& Args::value(std::string name, std::string metavar, std::string help) {
  order_.push_back(name);
  specs_[std::move(name)] = Spec{Kind::value, std::move(metavar), std::move(help)};
  return *this;
}

Args& Args::repeated(std::string name, std::string metavar, std::string help) {
  order_.push_back(name);
  specs_[std::move(name)] = Spec{Kind::repeated, std::move(metavar), std::move(help)};
  return *this;
}

void Args::parse(std::span<const std::string> argv) {
  for (const auto& a : argv) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") throw HelpRequested(usage());
  }
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-' || a == "--") {
      positional_.push_back(a);
      continue;
    }
    std::optional<std::string> inline_value;
    if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      inline_value = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (a.size() > 2 && a[1] != '-') {  // -j2
      inline_value = a.substr(2);
      a = a.substr(0, 2);
    }
    auto it = specs_.find(a);
    if (it == specs_.end()) {
      std::vector<std::string_view> names(order_.begin(), order_.end());
      std::string message = fmt::format("unknown option {}", a);
      if (auto g = closest_match(a, names); !g.empty()) message += fmt::format(" (did you mean {}?)", g);
      throw UsageError(message);
    }
    const Spec& spec = it->second;
    if (spec.kind == Kind::flag) {
      if (inline_value) throw UsageError(fmt::format("option {} takes no value", a));
      values_[a].push_back("true");
      continue;
    }
    std::string v;
    if (inline_value) {
      v = *inline_value;
    } else if (i + 1 < argv.size()) {
      v = argv[++i];
    } else {
      throw UsageError(fmt::format("option {} expects a value ({})", a, spec.metavar));
    }
    if (spec.kind == Kind::value && values_.count(a) > 0) throw UsageError(fmt::format("option {} given twice", a));
    values_[a].push_back(v);
  }
}

bool Args::has(std::string_view name) const {
  return values_.find(name) != values_.end();
}

std::optional<std::string> Args::get(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

const std::vector<std::string>& Args::all(std::string_view name) const {
  static const std::vector<std::string> empty;
  auto it = values_.find(name);
  return it == values_.end() ? empty : it->second;
}

std::string Args::usage() const {
  std::string out = usage_.empty() ? std::string() : fmt::format("usage: {}\n\n", usage_);
  return out + "options:\n" + help() + fmt::format("  {:<24} {}\n", "--help, -h", "print this and exit");
}

std::string Args::help() const {
  std::string out;
  for (const auto& name : order_) {
    const Spec& s = specs_.at(name);
    const std::string left = s.metavar.empty() ? name : fmt::format("{} {}", name, s.metavar);
    out += fmt::format("  {:<24} {}\n", left, s.help);
  }
  return out;
}

}  // namespace shardsim
