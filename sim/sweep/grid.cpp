#include "sweep/grid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <set>
#include <variant>

#include "config/yaml_load.hpp"
#include "core/error.hpp"
#include "core/reader.hpp"

namespace shardsim::sweep {
namespace {

constexpr std::string_view kEllipsis = "...";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

// Splits "a, {b: 1, c: 2}, [3, 4], 'x,y'" at the commas that are outside brackets and quotes.
std::vector<std::string_view> split_top_level(std::string_view text, const Location& where, const std::string& key) {
  std::vector<std::string_view> out;
  int depth = 0;
  char quote = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == '\\' && quote == '"') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  out.push_back(trim(text.substr(start)));
  for (const auto& item : out) {
    if (item.empty()) throw ConfigError(where, key, "expected a value between each pair of commas, as in pre,post,none");
  }
  return out;
}

bool is_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
}

void check_dotted_key(std::string_view key, const Location& where) {
  bool ok = !key.empty() && key.front() != '.' && key.back() != '.' && key.find("..") == std::string_view::npos;
  for (char c : key) ok = ok && (is_key_char(c) || c == '.');
  if (!ok) throw ConfigError(where, std::string(key), "expected a dotted scenario key such as fsdp.backward_prefetch");
}

bool is_ellipsis(const ConfigNode& n) {
  return n.is_scalar() && n.scalar == kEllipsis;
}

std::string join_values(const std::vector<std::int64_t>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i == 0 ? "" : ", ") + std::to_string(v[i]);
  return out;
}

// The next value after `cur` in the sequence the known values start, or nullopt when the
// sequence cannot go on (a descending ratio that no longer divides, or overflow).
struct Progression {
  enum class Kind { step, times, divide } kind = Kind::step;
  std::int64_t by = 0;

  [[nodiscard]] std::optional<std::int64_t> next(std::int64_t cur) const {
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max() / 4;
    switch (kind) {
      case Kind::step:
        if (cur > kMax || cur < -kMax) return std::nullopt;
        return cur + by;
      case Kind::times:
        if (cur > kMax / by || cur < -kMax / by) return std::nullopt;
        return cur * by;
      case Kind::divide:
        if (cur % by != 0) return std::nullopt;
        return cur / by;
    }
    return std::nullopt;
  }
};

// The progressions the known values follow: a constant step, a constant integer ratio (up or
// down). Two values fit both a step and a ratio; the end value then decides (see below).
std::vector<Progression> progressions_of(const std::vector<std::int64_t>& v) {
  auto all = [&](auto pred) {
    for (std::size_t i = 1; i < v.size(); ++i) {
      if (!pred(v[i - 1], v[i])) return false;
    }
    return true;
  };
  std::vector<Progression> out;
  const std::int64_t d = v[1] - v[0];
  if (d != 0 && all([&](std::int64_t a, std::int64_t b) { return b - a == d; })) out.push_back(Progression{Progression::Kind::step, d});
  if (v[0] != 0 && v[1] % v[0] == 0 && v[1] / v[0] >= 2) {
    const std::int64_t r = v[1] / v[0];
    if (all([&](std::int64_t a, std::int64_t b) { return a != 0 && b % a == 0 && b / a == r; }))
      out.push_back(Progression{Progression::Kind::times, r});
  }
  if (v[1] != 0 && v[0] % v[1] == 0 && v[0] / v[1] >= 2) {
    const std::int64_t r = v[0] / v[1];
    if (all([&](std::int64_t a, std::int64_t b) { return b != 0 && a % b == 0 && a / b == r; }))
      out.push_back(Progression{Progression::Kind::divide, r});
  }
  return out;
}

// Continues `known` along `prog` up to `end`; the message says where it missed when it does not
// reach `end` exactly.
std::variant<std::vector<std::int64_t>, std::string> continue_to(const std::vector<std::int64_t>& known, const Progression& prog,
                                                                 std::int64_t end) {
  std::vector<std::int64_t> seq = known;
  while (seq.back() != end) {
    const auto n = prog.next(seq.back());
    const bool passed = !n || (seq.back() < end ? *n > end : *n < end) || *n == seq.back();
    if (passed) {
      return fmt::format("{} is not in the sequence {}, ...: it goes {}{}", end, join_values(known), seq.back(),
                         n ? fmt::format(", {}", *n) : std::string(" and stops"));
    }
    seq.push_back(*n);
    if (seq.size() > kMaxRangeValues) return fmt::format("the range has more than {} values; expected a smaller end", kMaxRangeValues);
  }
  return seq;
}

// [1, 2, 4, ..., 128] -> [1, 2, 4, 8, 16, 32, 64, 128]. The end must be a member of the sequence;
// when the values before `...` fit more than one progression that reaches it ([1, 2, ..., 8]),
// the list is ambiguous and refused.
std::vector<ConfigNode> expand_ellipsis(const std::vector<ConfigNode>& items, const std::string& key) {
  std::size_t at = items.size();
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!is_ellipsis(items[i])) continue;
    if (at != items.size()) throw ConfigError(items[i].where, key, "expected one ... per list");
    at = i;
  }
  if (at == items.size()) return items;
  const ConfigNode& dots = items[at];
  if (at < 2 || at + 2 != items.size()) {
    throw ConfigError(dots.where, key, "expected at least two values before ... and exactly one after, as in [1, 2, 4, ..., 128]");
  }
  constexpr std::int64_t kLimit = std::int64_t{1} << 52;
  std::vector<std::int64_t> known;
  for (std::size_t i = 0; i < at; ++i) known.push_back(scalar_integer(items[i], key, -kLimit, kLimit));
  const std::int64_t end = scalar_integer(items[at + 1], key, -kLimit, kLimit);
  const auto progs = progressions_of(known);
  if (progs.empty()) {
    throw ConfigError(
        dots.where, key,
        fmt::format("cannot continue {}: expected values with a constant step (1, 3, 5) or ratio (1, 2, 4)", join_values(known)));
  }
  std::vector<std::vector<std::int64_t>> reached;
  std::string miss;
  for (const auto& p : progs) {
    auto r = continue_to(known, p, end);
    if (auto* seq = std::get_if<std::vector<std::int64_t>>(&r)) {
      reached.push_back(std::move(*seq));
    } else if (miss.empty()) {
      miss = std::get<std::string>(r);
    }
  }
  if (reached.empty()) throw ConfigError(items[at + 1].where, key, miss);
  if (reached.size() > 1) {
    throw ConfigError(dots.where, key,
                      fmt::format("{}, ..., {} could go on by a step or by a ratio; expected a third value, as in [{}, {}, {}, ..., {}]",
                                  join_values(known), end, reached[0][0], reached[0][1], reached[0][2], end));
  }
  std::vector<ConfigNode> out(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(at));
  for (std::size_t i = known.size(); i < reached.front().size(); ++i) {
    out.push_back(ConfigNode::make_scalar(std::to_string(reached.front()[i]), dots.where));
  }
  return out;
}

bool plain_safe(const std::string& s) {
  if (s.empty() || s == "null" || s == "Null" || s == "NULL" || s == "~" || s == kEllipsis) return false;
  if (s.front() == '-' && (s.size() == 1 || std::isdigit(static_cast<unsigned char>(s[1])) == 0)) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '/' || c == '+' || c == '-';
  });
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string Axis::label() const {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : " / ") + k;
  return out;
}

std::string Axis::value_label(std::size_t step) const {
  std::string out;
  for (std::size_t k = 0; k < keys.size(); ++k) out += (k == 0 ? "" : " / ") + values[step][k];
  return out;
}

std::string to_flow_yaml(const ConfigNode& node) {
  switch (node.kind) {
    case ConfigNode::Kind::null:
      return "null";
    case ConfigNode::Kind::scalar:
      return plain_safe(node.scalar) ? node.scalar : quoted(node.scalar);
    case ConfigNode::Kind::sequence: {
      std::string out = "[";
      for (std::size_t i = 0; i < node.items.size(); ++i) out += (i == 0 ? "" : ", ") + to_flow_yaml(node.items[i]);
      return out + "]";
    }
    case ConfigNode::Kind::map: {
      std::string out = "{";
      for (std::size_t i = 0; i < node.entries.size(); ++i) {
        const auto& e = node.entries[i];
        out += fmt::format("{}{}: {}", i == 0 ? "" : ", ", plain_safe(e.key) ? e.key : quoted(e.key), to_flow_yaml(e.value));
      }
      return out + "}";
    }
  }
  return "null";
}

Axis axis_from_list(const std::string& key, const ConfigNode& list, const Location& key_where) {
  check_dotted_key(key, key_where);
  if (!list.is_sequence()) {
    throw ConfigError(list.where, key, fmt::format("expected a list of values such as [pre, post, none]; got {}", list.describe()));
  }
  if (list.items.empty()) throw ConfigError(list.where, key, "expected at least one value; got an empty list");
  Axis axis;
  axis.keys = {key};
  axis.where = key_where;
  std::set<std::string> seen;
  for (const auto& item : expand_ellipsis(list.items, key)) {
    std::string text = to_flow_yaml(item);
    if (!seen.insert(text).second) throw ConfigError(item.where, key, fmt::format("value {} is listed twice", text));
    axis.values.push_back({std::move(text)});
  }
  return axis;
}

Axis parse_grid_option(std::string_view text) {
  const Location where{fmt::format("--grid {}", text), 0, 0};
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || trim(text.substr(0, eq)).empty()) {
    throw ConfigError(where, "", "expected KEY=V1,V2,..., e.g. --grid fsdp.backward_prefetch=pre,post,none");
  }
  const std::string key(trim(text.substr(0, eq)));
  check_dotted_key(key, where);
  ConfigNode list;
  list.kind = ConfigNode::Kind::sequence;
  list.where = where;
  for (const auto item : split_top_level(text.substr(eq + 1), where, key)) {
    if (item == kEllipsis) {
      list.items.push_back(ConfigNode::make_scalar(std::string(kEllipsis), where));
      continue;
    }
    ConfigNode value = config::parse_yaml(item, where);
    value.where = where;
    list.items.push_back(std::move(value));
  }
  return axis_from_list(key, list, where);
}

Axis zip_axes(std::vector<Axis> axes, const Location& where) {
  Axis out;
  out.where = where;
  std::string sizes;
  bool same = true;
  for (const auto& a : axes) {
    sizes += fmt::format("{}{}: {} values", sizes.empty() ? "" : ", ", a.label(), a.size());
    same = same && a.size() == axes.front().size();
  }
  if (!same) throw ConfigError(where, "", fmt::format("zipped lists must have the same length; got {}", sizes));
  for (auto& a : axes) {
    out.keys.insert(out.keys.end(), a.keys.begin(), a.keys.end());
    if (out.values.empty()) out.values.resize(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) out.values[i].insert(out.values[i].end(), a.values[i].begin(), a.values[i].end());
  }
  return out;
}

Axis parse_zip_options(std::span<const std::string> texts) {
  std::vector<Axis> axes;
  std::string all;
  for (const auto& t : texts) {
    axes.push_back(parse_grid_option(t));
    all += (all.empty() ? "--zip " : " --zip ") + t;
  }
  return zip_axes(std::move(axes), Location{all, 0, 0});
}

std::size_t grid_size(std::span<const Axis> axes) {
  std::set<std::string> keys;
  std::size_t n = 1;
  for (const auto& a : axes) {
    for (const auto& k : a.keys) {
      if (!keys.insert(k).second) throw ConfigError(a.where, k, "swept twice; give each key one list of values");
    }
    if (a.size() > kMaxPoints / n) {
      throw ConfigError(a.where, a.label(), fmt::format("the grid would have more than {} points; expected a smaller sweep", kMaxPoints));
    }
    n *= a.size();
  }
  return n;
}

std::vector<Point> expand(std::span<const Axis> axes) {
  const std::size_t n = grid_size(axes);
  std::vector<Point> points(n);
  for (std::size_t i = 0; i < n; ++i) {
    points[i].index = i;
    std::size_t rest = i;
    std::vector<std::size_t> coords(axes.size());
    for (std::size_t a = axes.size(); a-- > 0;) {
      coords[a] = rest % axes[a].size();
      rest /= axes[a].size();
    }
    for (std::size_t a = 0; a < axes.size(); ++a) {
      for (std::size_t k = 0; k < axes[a].keys.size(); ++k) {
        const std::string& value = axes[a].values[coords[a]][k];
        if (!value.empty()) points[i].assignments.push_back(fmt::format("{}={}", axes[a].keys[k], value));
      }
    }
  }
  return points;
}

std::pair<std::string, std::string> split_assignment(std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos) return {std::string(assignment), ""};
  return {std::string(assignment.substr(0, eq)), std::string(assignment.substr(eq + 1))};
}

}  // namespace shardsim::sweep
