#include "config/overrides.hpp"

#include <fmt/format.h>

#include "config/yaml_load.hpp"
#include "core/error.hpp"

namespace shardsim::config {

void set_dotted(ConfigNode& root, std::string_view dotted_key, ConfigNode value, const Location& key_where) {
  ConfigNode* cur = &root;
  std::string path;
  std::string_view rest = dotted_key;
  while (true) {
    const auto dot = rest.find('.');
    const std::string_view part = rest.substr(0, dot);
    if (part.empty()) throw ConfigError(key_where, std::string(dotted_key), "expected a dotted key such as fsdp.backward_prefetch");
    path += path.empty() ? std::string(part) : "." + std::string(part);
    if (!cur->is_map() && !cur->is_null()) {
      throw ConfigError(key_where, path, fmt::format("cannot set a key inside {}", cur->describe()));
    }
    if (cur->is_null()) cur->kind = ConfigNode::Kind::map;
    if (dot == std::string_view::npos) {
      cur->set(part, std::move(value), key_where);
      return;
    }
    ConfigNode* next = cur->find(part);
    if (next == nullptr) {
      cur->set(part, ConfigNode::make_map(key_where), key_where);
      next = cur->find(part);
    }
    cur = next;
    rest = rest.substr(dot + 1);
  }
}

void apply_assignment(ConfigNode& root, std::string_view assignment) {
  const Location where{fmt::format("--set {}", assignment), 0, 0};
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw ConfigError(where, "", "expected KEY=VALUE, e.g. --set fsdp.backward_prefetch=post");
  }
  const std::string_view key = assignment.substr(0, eq);
  const std::string_view text = assignment.substr(eq + 1);
  ConfigNode value = parse_yaml(text, where);
  value.where = where;
  set_dotted(root, key, std::move(value), where);
}

namespace {
void flatten_into(const ConfigNode& node, const std::string& prefix, const Location& key_where, std::vector<DottedValue>& out) {
  if (node.is_map()) {
    for (const auto& e : node.entries) {
      flatten_into(e.value, prefix.empty() ? e.key : prefix + "." + e.key, e.key_where, out);
    }
    return;
  }
  out.push_back(DottedValue{prefix, key_where, node});
}
}  // namespace

std::vector<DottedValue> flatten_overrides(const ConfigNode& overrides, const std::string& path) {
  std::vector<DottedValue> out;
  if (overrides.is_null()) return out;
  if (!overrides.is_map()) {
    throw ConfigError(overrides.where, path,
                      fmt::format("expected a mapping of topology keys such as gpu.memory: 96GiB; got {}", overrides.describe()));
  }
  flatten_into(overrides, "", overrides.where, out);
  return out;
}

void merge_into(ConfigNode& base, ConfigNode overlay) {
  if (!base.is_map() || !overlay.is_map()) {
    base = std::move(overlay);
    return;
  }
  for (auto& e : overlay.entries) {
    if (ConfigNode* existing = base.find(e.key); existing != nullptr && existing->is_map() && e.value.is_map()) {
      merge_into(*existing, std::move(e.value));
    } else {
      base.set(e.key, std::move(e.value), e.key_where);
    }
  }
  base.where = overlay.where;
}

}  // namespace shardsim::config
