#include "core/config_node.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace shardsim {

const ConfigEntry* ConfigNode::find_entry(std::string_view key) const {
  auto it = std::find_if(entries.begin(), entries.end(), [&](const ConfigEntry& e) { return e.key == key; });
  return it == entries.end() ? nullptr : &*it;
}

const ConfigNode* ConfigNode::find(std::string_view key) const {
  const ConfigEntry* e = find_entry(key);
  return e == nullptr ? nullptr : &e->value;
}

ConfigNode* ConfigNode::find(std::string_view key) {
  return const_cast<ConfigNode*>(std::as_const(*this).find(key));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
}

void ConfigNode::set(std::string_view key, ConfigNode value, Location key_where) {
  if (kind != Kind::map) {
    kind = Kind::map;
    scalar.clear();
    items.clear();
  }
  for (auto& e : entries) {
    if (e.key == key) {
      e.value = std::move(value);
      e.key_where = std::move(key_where);
      return;
    }
  }
  entries.push_back(ConfigEntry{std::string(key), std::move(key_where), std::move(value)});
}

std::string ConfigNode::describe() const {
  switch (kind) {
    case Kind::null:
      return "nothing";
    case Kind::scalar:
      return quote(scalar);
    case Kind::map:
      return "a mapping";
    case Kind::sequence:
      return "a list";
  }
  return "?";
}

ConfigNode ConfigNode::make_scalar(std::string text, Location where) {
  ConfigNode n;
  n.kind = Kind::scalar;
  n.scalar = std::move(text);
  n.where = std::move(where);
  return n;
}

ConfigNode ConfigNode::make_map(Location where) {
  ConfigNode n;
  n.kind = Kind::map;
  n.where = std::move(where);
  return n;
}

}  // namespace shardsim
