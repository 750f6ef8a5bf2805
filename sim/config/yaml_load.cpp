#include "config/yaml_load.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"

namespace shardsim::config {
namespace {

constexpr int kMaxDepth = 32;

Location at(const Location& base, const YAML::Mark& m) {
  Location l = base;
  if (m.line < 0) return l;  // yaml-cpp's null mark
  if (base.line > 0 && m.line == 0) {
    l.column = base.column + m.column;  // a snippet inside a longer line (a --set value)
  } else {
    l.line = (base.line > 0 ? base.line : 1) + m.line;
    l.column = m.column + 1;
  }
  return l;
}

ConfigNode convert(const YAML::Node& n, const Location& base, int depth) {
  if (depth > kMaxDepth) {
    throw ConfigError(at(base, n.Mark()), "", fmt::format("nesting deeper than {} levels (an alias that refers to itself?)", kMaxDepth));
  }
  ConfigNode out;
  out.where = at(base, n.Mark());
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out.kind = ConfigNode::Kind::null;
      return out;
    case YAML::NodeType::Scalar:
      out.kind = ConfigNode::Kind::scalar;
      out.scalar = n.Scalar();
      return out;
    case YAML::NodeType::Sequence:
      out.kind = ConfigNode::Kind::sequence;
      for (const auto& item : n) out.items.push_back(convert(item, base, depth + 1));
      return out;
    case YAML::NodeType::Map: {
      out.kind = ConfigNode::Kind::map;
      std::set<std::string> seen;
      for (const auto& kv : n) {
        const Location key_where = at(base, kv.first.Mark());
        if (!kv.first.IsScalar()) throw ConfigError(key_where, "", "expected a plain key; got a mapping or list as key");
        const std::string key = kv.first.Scalar();
        if (!seen.insert(key).second) throw ConfigError(key_where, key, "duplicate key");
        out.entries.push_back(ConfigEntry{key, key_where, convert(kv.second, base, depth + 1)});
      }
      return out;
    }
  }
  return out;
}

}  // namespace

ConfigNode parse_yaml(std::string_view text, const Location& where) {
  if (text.find('\0') != std::string_view::npos) {
    throw ConfigError(where, "", "not a text file (it contains NUL bytes); expected YAML");
  }
  try {
    YAML::Node root = YAML::Load(std::string(text));
    ConfigNode out = convert(root, where, 0);
    if (out.where.line == 0 && where.line == 0) {
      out.where.line = 1;
      out.where.column = 1;
    }
    return out;
  } catch (const YAML::Exception& e) {
    // e.msg is the bare message; e.what() repeats the position in yaml-cpp's own format.
    throw ConfigError(at(where, e.mark), "", fmt::format("invalid YAML: {}", e.msg));
  }
}

ConfigNode load_yaml_file(const std::filesystem::path& file) {
  const Location whole{file.string(), 0, 0};
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw ConfigError(whole, "", "is a directory; expected a YAML file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(whole, "", fmt::format("cannot read file: {}", std::strerror(errno)));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (text.size() > kMaxConfigFileBytes) {
    throw ConfigError(whole, "", fmt::format("file is {} bytes; expected a YAML file under {} bytes", text.size(), kMaxConfigFileBytes));
  }
  return parse_yaml(text, whole);
}

}  // namespace shardsim::config
