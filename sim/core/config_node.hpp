// A YAML-free tree of configuration values, each with the place it came from. The config layer
// turns YAML into this tree (so no YAML::Node escapes the loader); --set overrides edit it; the
// Reader (reader.hpp) checks it against a parameter schema and turns it into plain structs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace shardsim {

struct ConfigEntry;

struct ConfigNode {
  enum class Kind { null, scalar, map, sequence };

  Kind kind = Kind::null;
  std::string scalar;                // Kind::scalar: the text as written (quotes removed)
  std::vector<ConfigEntry> entries;  // Kind::map, in file order
  std::vector<ConfigNode> items;     // Kind::sequence
  Location where;

  [[nodiscard]] bool is_null() const { return kind == Kind::null; }
  [[nodiscard]] bool is_scalar() const { return kind == Kind::scalar; }
  [[nodiscard]] bool is_map() const { return kind == Kind::map; }
  [[nodiscard]] bool is_sequence() const { return kind == Kind::sequence; }

  // Map access; nullptr when absent (or when this is not a map).
  [[nodiscard]] const ConfigNode* find(std::string_view key) const;
  [[nodiscard]] ConfigNode* find(std::string_view key);
  [[nodiscard]] const ConfigEntry* find_entry(std::string_view key) const;
  // Sets key to value, replacing an existing entry or appending a new one.
  void set(std::string_view key, ConfigNode value, Location key_where);

  // "map", "sequence", "scalar \"x\"", "nothing": for messages.
  [[nodiscard]] std::string describe() const;

  static ConfigNode make_scalar(std::string text, Location where);
  static ConfigNode make_map(Location where);
};

struct ConfigEntry {
  std::string key;
  Location key_where;
  ConfigNode value;
};

}  // namespace shardsim
