// A small command-line parser: each command declares its options; unknown options and missing
// values are usage errors (exit code 2) with a suggestion.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `--help` or `-h` among a command's arguments: what() is the command's usage, for stdout, exit 0.
class HelpRequested : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // `usage`: the command line as the user types it, e.g. "shardsim run SCENARIO [--out DIR]".
  explicit Args(std::string usage = "") : usage_(std::move(usage)) {}

  // Declarations, before parse().
  Args& flag(std::string name, std::string help);
  Args& value(std::string name, std::string metavar, std::string help);
  Args& repeated(std::string name, std::string metavar, std::string help);

  // Throws UsageError, or HelpRequested when --help / -h is among the arguments. Arguments not
  // starting with "-" are positional; "-jN" and "--x=v" work.
  void parse(std::span<const std::string> argv);

  [[nodiscard]] bool has(std::string_view name) const;
  [[nodiscard]] std::optional<std::string> get(std::string_view name) const;
  [[nodiscard]] const std::vector<std::string>& all(std::string_view name) const;
  [[nodiscard]] const std::vector<std::string>& positional() const { return positional_; }
  [[nodiscard]] std::string help() const;  // the options, one per line
  [[nodiscard]] std::string usage() const;  // "usage: ...", then the options

 private:
  enum class Kind { flag, value, repeated };
  struct Spec {
    Kind kind;
    std::string metavar;
    std::string help;
  };
  std::string usage_;
  std::map<std::string, Spec, std::less<>> specs_;
  std::vector<std::string> order_;
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
  std::vector<std::string> positional_;
};

}  // namespace shardsim
