#include "core/reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace shardsim {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1);
  std::vector<std::size_t> cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string expected_got(const std::string& expected, const ConfigNode& n) {
  return fmt::format("expected {}; got {}", expected, n.describe());
}

const ConfigNode& require_scalar(const ConfigNode& n, const std::string& path, const std::string& expected) {
  if (!n.is_scalar()) throw ConfigError(n.where, path, expected_got(expected, n));
  return n;
}

}  // namespace

std::string join(std::span<const std::string_view> words, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += sep;
    out += words[i];
  }
  return out;
}

std::string closest_match(std::string_view word, std::span<const std::string_view> candidates) {
  const std::string w = lower(word);
  auto common_prefix = [&](std::string_view c) {
    std::size_t n = 0;
    while (n < w.size() && n < c.size() && w[n] == std::tolower(static_cast<unsigned char>(c[n]))) ++n;
    return n;
  };
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  std::size_t best_prefix = 0;
  for (auto c : candidates) {
    const std::size_t d = edit_distance(w, lower(c));
    // On a tie, the candidate that shares the longer beginning is the likelier intent
    // ("llama3-8b" -> "llama3.1-8b", not "llama2-7b").
    if (d < best_d || (d == best_d && common_prefix(c) > best_prefix)) {
      best_d = d;
      best = std::string(c);
      best_prefix = common_prefix(c);
    }
  }
  // A typo changes a few characters; anything further is a different word.
  const std::size_t limit = std::max<std::size_t>(2, w.size() / 3);
  if (best_d <= limit) return best;
  // An abbreviation: the shortest candidate the word begins ("hybrid" -> "hybrid_shard").
  std::string shortest;
  if (w.size() >= 3) {
    for (auto c : candidates) {
      if (common_prefix(c) == w.size() && (shortest.empty() || c.size() < shortest.size())) shortest = std::string(c);
    }
  }
  return shortest;
}

std::string not_one_of_message(std::span<const std::string_view> options, std::string_view got) {
  std::string message = fmt::format("expected one of {}; got {}", join(options), quote(got));
  if (auto guess = closest_match(got, options); !guess.empty()) message += fmt::format(" (did you mean \"{}\"?)", guess);
  return message;
}

std::int64_t scalar_integer(const ConfigNode& n, const std::string& path, std::int64_t min, std::int64_t max) {
  const std::string expected = fmt::format("an integer between {} and {}", min, max);
  require_scalar(n, path, expected);
  const std::string& s = n.scalar;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    // Accept integral values written in scientific notation, e.g. 1e8.
    double d = 0.0;
    auto [p2, ec2] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec2 != std::errc() || p2 != s.data() + s.size() || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e18) {
      throw ConfigError(n.where, path, expected_got(expected, n));
    }
    v = static_cast<std::int64_t>(d);
  }
  if (v < min || v > max) throw ConfigError(n.where, path, expected_got(expected, n));
  return v;
}

double scalar_number(const ConfigNode& n, const std::string& path, double min, double max) {
  const std::string expected = fmt::format("a number between {:g} and {:g}", min, max);
  require_scalar(n, path, expected);
  const std::string& s = n.scalar;
  double d = 0.0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(d) || d < min || d > max) {
    throw ConfigError(n.where, path, expected_got(expected, n));
  }
  return d;
}

bool scalar_boolean(const ConfigNode& n, const std::string& path) {
  require_scalar(n, path, "true or false");
  const std::string s = lower(n.scalar);
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  throw ConfigError(n.where, path, expected_got("true or false", n));
}

double scalar_quantity(const ConfigNode& n, const std::string& path, Dimension d) {
  require_scalar(n, path, fmt::format("a {} such as {}", dimension_name(d), dimension_example(d)));
  try {
    return parse_quantity(n.scalar, d);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(n.where, path, e.what());
  }
}

Reader::Reader(const ConfigNode& node, std::string path, const Schema& schema) : node_(node), path_(std::move(path)), schema_(schema) {
  if (!node_.is_map() && !node_.is_null()) {
    throw ConfigError(node_.where, path_, expected_got(fmt::format("a mapping of {} settings", schema_.name), node_));
  }
}

const ParamSpec& Reader::spec(std::string_view key) const {
  const ParamSpec* s = schema_.find(key);
  assert(s != nullptr && "key read but not declared in the schema");
  return *s;
}

bool Reader::has(std::string_view key) const {
  const ConfigNode* n = node_.find(key);
  return n != nullptr && !n->is_null();
}

const ConfigNode* Reader::node(std::string_view key) const {
  (void)spec(key);
  const ConfigNode* n = node_.find(key);
  return (n == nullptr || n->is_null()) ? nullptr : n;
}

std::string Reader::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

Location Reader::where(std::string_view key) const {
  const ConfigNode* n = node_.find(key);
  return n != nullptr ? n->where : node_.where;
}

void Reader::fail(std::string_view key, const std::string& message) const {
  throw ConfigError(where(key), path_of(key), message);
}

const ConfigNode& Reader::scalar_or_default(std::string_view key, ConfigNode& scratch) const {
  if (const ConfigNode* n = node(key)) return *n;
  const ParamSpec& s = spec(key);
  if (s.default_value.empty()) {
    throw ConfigError(node_.where, path_of(key), fmt::format("missing required key (expected {})", s.type));
  }
  scratch = ConfigNode::make_scalar(std::string(s.default_value), node_.where);
  return scratch;
}

const Range& Reader::range_of(std::string_view key) const {
  const ParamSpec& s = spec(key);
  assert(s.range && "a bounded read of a key whose ParamSpec has no range");
  return *s.range;
}

std::int64_t Reader::integer(std::string_view key) const {
  const Range& r = range_of(key);
  return integer(key, static_cast<std::int64_t>(r.min), static_cast<std::int64_t>(r.max));
}

std::optional<std::int64_t> Reader::opt_integer(std::string_view key) const {
  const Range& r = range_of(key);
  return opt_integer(key, static_cast<std::int64_t>(r.min), static_cast<std::int64_t>(r.max));
}

double Reader::number(std::string_view key) const {
  const Range& r = range_of(key);
  return number(key, r.min, r.max);
}

std::string Reader::choice(std::string_view key) const {
  const ParamSpec& s = spec(key);
  assert(!s.choices.empty() && "a choice read of a key whose ParamSpec has no choices");
  return choice(key, s.choices);
}

std::size_t Reader::choice_index(std::string_view key) const {
  const std::string v = choice(key);
  const auto& names = spec(key).choices;
  return static_cast<std::size_t>(std::find(names.begin(), names.end(), v) - names.begin());
}

// Quantities are checked against their ParamSpec's range when it has one: a latency of 1e300 s is
// valid YAML and a valid duration, and would give a run of zero tokens per second.
void Reader::check_range(std::string_view key, double v, Dimension d) const {
  const ParamSpec& s = spec(key);
  if (!s.range || (v >= s.range->min && v <= s.range->max)) return;
  const ConfigNode* n = node(key);
  fail(key, fmt::format("expected a {} from {} to {}; got {}", dimension_name(d), format_quantity(s.range->min, d),
                        format_quantity(s.range->max, d), n != nullptr ? n->describe() : format_quantity(v, d)));
}

std::int64_t Reader::integer(std::string_view key, std::int64_t min, std::int64_t max) const {
  ConfigNode scratch;
  return scalar_integer(scalar_or_default(key, scratch), path_of(key), min, max);
}

std::optional<std::int64_t> Reader::opt_integer(std::string_view key, std::int64_t min, std::int64_t max) const {
  if (const ConfigNode* n = node(key)) return scalar_integer(*n, path_of(key), min, max);
  return std::nullopt;
}

double Reader::number(std::string_view key, double min, double max) const {
  ConfigNode scratch;
  return scalar_number(scalar_or_default(key, scratch), path_of(key), min, max);
}

std::optional<double> Reader::opt_number(std::string_view key, double min, double max) const {
  if (const ConfigNode* n = node(key)) return scalar_number(*n, path_of(key), min, max);
  return std::nullopt;
}

bool Reader::boolean(std::string_view key) const {
  ConfigNode scratch;
  return scalar_boolean(scalar_or_default(key, scratch), path_of(key));
}

std::optional<bool> Reader::opt_boolean(std::string_view key) const {
  if (const ConfigNode* n = node(key)) return scalar_boolean(*n, path_of(key));
  return std::nullopt;
}

std::string Reader::text(std::string_view key) const {
  ConfigNode scratch;
  const ConfigNode& n = scalar_or_default(key, scratch);
  return require_scalar(n, path_of(key), "a string").scalar;
}

std::optional<std::string> Reader::opt_text(std::string_view key) const {
  if (const ConfigNode* n = node(key)) return require_scalar(*n, path_of(key), "a string").scalar;
  return std::nullopt;
}

std::string Reader::choice(std::string_view key, std::span<const std::string_view> options) const {
  ConfigNode scratch;
  const ConfigNode& n = scalar_or_default(key, scratch);
  require_scalar(n, path_of(key), fmt::format("one of {}", join(options)));
  for (auto o : options) {
    if (o == n.scalar) return n.scalar;
  }
  throw ConfigError(n.where, path_of(key), not_one_of_message(options, n.scalar));
}

double Reader::quantity(std::string_view key, Dimension d) const {
  ConfigNode scratch;
  const double v = scalar_quantity(scalar_or_default(key, scratch), path_of(key), d);
  check_range(key, v, d);
  return v;
}

std::optional<double> Reader::opt_quantity(std::string_view key, Dimension d) const {
  if (const ConfigNode* n = node(key)) {
    const double v = scalar_quantity(*n, path_of(key), d);
    check_range(key, v, d);
    return v;
  }
  return std::nullopt;
}

std::filesystem::path Reader::file_path(std::string_view key) const {
  const std::string t = text(key);
  if (t.empty()) fail(key, "expected a file path; got an empty string");
  std::filesystem::path p(t);
  if (p.is_relative()) {
    const Location w = where(key);
    // Values from the command line are relative to the working directory.
    if (w.line > 0) p = std::filesystem::path(w.file).parent_path() / p;
  }
  return p.lexically_normal();
}

void Reader::finish() const {
  if (!node_.is_map()) return;
  std::vector<std::string_view> names;
  names.reserve(schema_.params.size());
  for (const auto& p : schema_.params) names.push_back(p.name);
  for (const auto& e : node_.entries) {
    if (const ParamSpec* spec = schema_.find(e.key)) {
      // An empty value (`nodes:`, `nodes: ~`, --set cluster.nodes=) is not the default: it is a
      // mistake. Only a section may be left empty (it then takes all its defaults).
      if (e.value.is_null() && spec->type.rfind("mapping", 0) != 0) {
        throw ConfigError(e.value.where.line > 0 ? e.value.where : e.key_where, path_of(e.key),
                          fmt::format("expected {}; got nothing (leave the key out for its default, {})", spec->type_text(),
                                      spec->default_value.empty() || spec->default_value == "-" ? "none" : spec->default_value));
      }
      continue;
    }
    std::string message = fmt::format("unknown key in {} settings", schema_.name);
    if (auto guess = closest_match(e.key, names); !guess.empty()) {
      message += fmt::format(" (did you mean \"{}\"?)", guess);
    } else {
      message += fmt::format("; expected one of {}", join(names));
    }
    throw ConfigError(e.key_where, path_of(e.key), message);
  }
}

}  // namespace shardsim
