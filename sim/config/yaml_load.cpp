#include "config/yaml_load.hpp"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>
#include <sstream>

#include "core/error.hpp"

namespace shardsim::config {
namespace {

// A position inside `text` (0-based line and column, like YAML::Mark) as a Location.
Location at(const Location& base, int line, int column) {
  Location l = base;
  if (line < 0) return l;  // yaml-cpp's null mark
  if (base.line > 0 && line == 0) {
    l.column = base.column + column;  // a snippet inside a longer line (a --set value)
  } else {
    l.line = (base.line > 0 ? base.line : 1) + line;
    l.column = column + 1;
  }
  return l;
}

Location at(const Location& base, const YAML::Mark& m) {
  return at(base, m.line, m.column);
}

Location at_offset(const Location& base, std::string_view text, std::size_t offset) {
  int line = 0;
  int column = 0;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 0;
    } else {
      ++column;
    }
  }
  return at(base, line, column);
}

// Length of the UTF-8 sequence starting at text[i], or 0 if it is not valid UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0U; };
  const unsigned c = byte(i);
  const auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return byte(k) >= lo && byte(k) <= hi; };
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c == 0xE0) return cont(i + 1, 0xA0) && cont(i + 2) ? 3 : 0;
  if (c == 0xED) return cont(i + 1, 0x80, 0x9F) && cont(i + 2) ? 3 : 0;
  if (c >= 0xE1 && c <= 0xEF) return cont(i + 1) && cont(i + 2) ? 3 : 0;
  if (c == 0xF0) return cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c == 0xF4) return cont(i + 1, 0x80, 0x8F) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  return 0;
}

// yaml-cpp's messages are terse ("illegal map value"); a tab in the indentation is the usual
// cause of several of them, and YAML forbids tabs there.
std::string tab_hint(std::string_view text, int error_line) {
  int line = 0;
  std::size_t start = 0;
  while (start <= text.size() && line <= error_line) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    if (line >= error_line - 1) {
      const std::string_view l = text.substr(start, end - start);
      const std::size_t indent_end = l.find_first_not_of(" \t");
      if (l.substr(0, indent_end).find('\t') != std::string_view::npos) return " (a tab in the indentation? YAML indents with spaces only)";
    }
    start = end + 1;
    ++line;
  }
  return "";
}

// Where the second YAML document's first value is, if it has one (an empty or null document after
// a trailing `---` is harmless). yaml-cpp's LoadAll loops forever on some malformed input (a lone
// ","), so the parser is driven by hand for exactly two documents.
class FirstValue final : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> mark;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { note(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { note(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { note(m); }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { note(m); }
  void OnMapEnd() override {}

 private:
  void note(const YAML::Mark& m) {
    if (!mark) mark = m;
  }
};

std::optional<YAML::Mark> second_document(std::string_view text) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  FirstValue first;
  if (!parser.HandleNextDocument(first)) return std::nullopt;
  FirstValue second;
  if (!parser.HandleNextDocument(second)) return std::nullopt;
  return second.mark;
}

class Converter {
 public:
  explicit Converter(const Location& base) : base_(base) {}

  ConfigNode convert(const YAML::Node& n, int depth) {
    if (depth > kMaxYamlDepth) {
      throw ConfigError(
          at(base_, n.Mark()), "",
          fmt::format("nesting deeper than {} levels; expected a configuration a few levels deep (an alias that refers to itself?)",
                      kMaxYamlDepth));
    }
    if (++values_ > kMaxYamlValues) {
      // An aliased node carries the position of its anchor; the top-level entry being expanded
      // is where the blow-up is written.
      throw ConfigError(top_where_.line > 0 ? top_where_ : at(base_, n.Mark()), top_key_,
                        fmt::format("more than {} values once aliases are expanded; expected a configuration of a few hundred values "
                                    "(aliases that repeat lists of aliases?)",
                                    kMaxYamlValues));
    }
    ConfigNode out;
    out.where = at(base_, n.Mark());
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
        for (const auto& item : n) out.items.push_back(convert(item, depth + 1));
        return out;
      case YAML::NodeType::Map: {
        out.kind = ConfigNode::Kind::map;
        std::set<std::string> seen;
        for (const auto& kv : n) {
          const Location key_where = at(base_, kv.first.Mark());
          if (!kv.first.IsScalar()) throw ConfigError(key_where, "", "expected a plain key; got a mapping or list as key");
          const std::string key = kv.first.Scalar();
          if (!seen.insert(key).second) throw ConfigError(key_where, key, "duplicate key");
          if (depth == 0) {
            top_key_ = key;
            top_where_ = at(base_, kv.second.Mark());
          }
          out.entries.push_back(ConfigEntry{key, key_where, convert(kv.second, depth + 1)});
        }
        return out;
      }
    }
    return out;
  }

 private:
  Location base_;
  std::size_t values_ = 0;
  std::string top_key_;  // the top-level entry being converted, for messages
  Location top_where_;
};

}  // namespace

void check_text(std::string_view text, const Location& where, std::string_view expected) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      throw ConfigError(at_offset(where, text, i), "", fmt::format("not a text file (control byte 0x{:02x}); expected {}", c, expected));
    }
    const std::size_t n = utf8_length(text, i);
    if (n == 0) throw ConfigError(at_offset(where, text, i), "", fmt::format("not valid UTF-8 (byte 0x{:02x}); expected {}", c, expected));
    i += n;
  }
}

ConfigNode parse_yaml(std::string_view text, const Location& where) {
  check_text(text, where, "YAML text");
  try {
    YAML::Node root = YAML::Load(std::string(text));
    // A second document after `---` would be read by nothing: refuse it rather than ignore it.
    if (const auto second = second_document(text)) {
      throw ConfigError(at(where, *second), "",
                        "a second YAML document (after ---); expected one document per file (the rest would be ignored)");
    }
    ConfigNode out = Converter(where).convert(root, 0);
    if (out.where.line == 0 && where.line == 0) {
      out.where.line = 1;
      out.where.column = 1;
    }
    return out;
  } catch (const YAML::DeepRecursion& e) {
    throw ConfigError(at(where, e.mark), "", fmt::format("invalid YAML: nesting deeper than {} levels", kMaxYamlDepth));
  } catch (const YAML::Exception& e) {
    // e.msg is the bare message; e.what() repeats the position in yaml-cpp's own format.
    throw ConfigError(at(where, e.mark), "", fmt::format("invalid YAML: {}{}", e.msg, tab_hint(text, e.mark.line)));
  }
}

ConfigNode load_yaml_file(const std::filesystem::path& file, const FileSource& source, const std::optional<FileRef>& ref) {
  const std::string text = read_config_file(source, file, ref);
  return parse_yaml(text, Location{file.string(), 0, 0});
}

ConfigNode load_yaml_file(const std::filesystem::path& file) {
  return load_yaml_file(file, DiskFiles{}, std::nullopt);
}

}  // namespace shardsim::config
