// Checks one mapping of a ConfigNode tree against its Schema and reads typed values from it.
// Every error names the file:line:col of the offending value and its dotted key path.
//
//   Reader r(node, "training", kTrainingSchema);
//   cfg.seq_len = r.integer("seq_len", 1, 1 << 24);   // default from the schema when absent
//   r.finish();                                        // unknown keys -> "did you mean ...?"
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_node.hpp"
#include "core/param_spec.hpp"
#include "core/units.hpp"

namespace shardsim {

class Reader {
 public:
  // `node` must outlive the Reader. A null node reads as an empty mapping (all defaults).
  Reader(const ConfigNode& node, std::string path, const Schema& schema);

  [[nodiscard]] bool has(std::string_view key) const;
  [[nodiscard]] const ConfigNode* node(std::string_view key) const;
  [[nodiscard]] std::string path_of(std::string_view key) const;  // "fsdp.wrap"
  [[nodiscard]] Location where(std::string_view key) const;       // of the value, else of the map

  // Typed reads. When the key is absent the schema's default is parsed instead; with no default
  // the key is required. The opt_ forms return nullopt when the key is absent. Bounds and choices
  // come from the key's ParamSpec; the forms with bounds narrow them where they depend on other
  // settings (a rank below the world size).
  [[nodiscard]] std::int64_t integer(std::string_view key) const;
  [[nodiscard]] std::optional<std::int64_t> opt_integer(std::string_view key) const;
  [[nodiscard]] double number(std::string_view key) const;
  [[nodiscard]] std::string choice(std::string_view key) const;
  // The chosen name's index among the key's ParamSpec choices (for an enum that follows them).
  [[nodiscard]] std::size_t choice_index(std::string_view key) const;
  [[nodiscard]] std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max) const;
  [[nodiscard]] std::optional<std::int64_t> opt_integer(std::string_view key, std::int64_t min, std::int64_t max) const;
  [[nodiscard]] double number(std::string_view key, double min, double max) const;
  [[nodiscard]] std::optional<double> opt_number(std::string_view key, double min, double max) const;
  [[nodiscard]] bool boolean(std::string_view key) const;
  [[nodiscard]] std::optional<bool> opt_boolean(std::string_view key) const;
  [[nodiscard]] std::string text(std::string_view key) const;
  [[nodiscard]] std::optional<std::string> opt_text(std::string_view key) const;
  [[nodiscard]] std::string choice(std::string_view key, std::span<const std::string_view> options) const;
  [[nodiscard]] double quantity(std::string_view key, Dimension d) const;
  [[nodiscard]] std::optional<double> opt_quantity(std::string_view key, Dimension d) const;
  // A file path, resolved relative to the file the value was written in.
  [[nodiscard]] std::filesystem::path file_path(std::string_view key) const;

  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

  // Rejects keys the schema does not declare, suggesting the closest declared one.
  void finish() const;

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  const ConfigNode& scalar_or_default(std::string_view key, ConfigNode& scratch) const;
  [[nodiscard]] const ParamSpec& spec(std::string_view key) const;
  [[nodiscard]] const Range& range_of(std::string_view key) const;
  void check_range(std::string_view key, double v, Dimension d) const;

  const ConfigNode& node_;
  std::string path_;
  const Schema& schema_;
};

// Conversions of a single scalar, shared by Reader and by code that reads list items.
// Each throws ConfigError at `n.where` naming `path`.
[[nodiscard]] std::int64_t scalar_integer(const ConfigNode& n, const std::string& path, std::int64_t min, std::int64_t max);
[[nodiscard]] double scalar_number(const ConfigNode& n, const std::string& path, double min, double max);
[[nodiscard]] bool scalar_boolean(const ConfigNode& n, const std::string& path);
[[nodiscard]] double scalar_quantity(const ConfigNode& n, const std::string& path, Dimension d);

// The closest candidate by edit distance, or empty when none is close enough to be a typo.
[[nodiscard]] std::string closest_match(std::string_view word, std::span<const std::string_view> candidates);
[[nodiscard]] std::string join(std::span<const std::string_view> words, std::string_view sep = ", ");
// The message for a value that is not one of `options`:
// "expected one of pre, post, none; got "befor" (did you mean "pre"?)". Names of registered
// implementations have their own form (core/registry.hpp, unknown_name_message).
[[nodiscard]] std::string not_one_of_message(std::span<const std::string_view> options, std::string_view got);

}  // namespace shardsim
