// Errors shardsim reports to users. User mistakes throw ConfigError (exit code 2); failures
// while running a valid input throw RuntimeError (exit code 1). Programmer mistakes assert.
// Only main() catches, prints and picks the exit code.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace shardsim {

// Where a value came from: a file position, or a command-line override ("--set k=v").
struct Location {
  std::string file;  // path as the user wrote it, or "<command line>"
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based; 0 when unknown

  [[nodiscard]] std::string str() const;  // "file:line:col", "file" when line is unknown
};

// "scenarios/x.yaml:12:5: error: fsdp.backward_prefetch: expected one of pre, post, none; got ..."
class ConfigError : public std::runtime_error {
 public:
  ConfigError(const Location& where, const std::string& key_path, const std::string& message);
  [[nodiscard]] const Location& where() const { return where_; }
  [[nodiscard]] const std::string& key_path() const { return key_path_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  Location where_;
  std::string key_path_;
  std::string message_;
};

// A setting that is valid but does not apply to the configuration it is in (an FSDP1 setting on
// FSDP2, say): not fatal, never silent. `shardsim run` prints it on stderr, the JSON summary
// carries it (`warnings`), so a sweep records it with each point.
struct ConfigWarning {
  Location where;
  std::string key_path;
  std::string message;
  // "scenarios/x.yaml:12:5: warning: fsdp.backward_prefetch: ..."
  [[nodiscard]] std::string str() const;
};

class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A value quoted for a message: in double quotes, control characters and bytes that are not
// printable escaped (\n, \x07), cut after 60 characters with "..." so that a 4 MB scalar or a
// line of binary garbage cannot flood the terminal.
[[nodiscard]] std::string quote(std::string_view text);

}  // namespace shardsim
