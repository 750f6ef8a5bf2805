// Text placed in SVG and HTML outputs: markup characters escaped, and characters XML 1.0 forbids
// (control characters other than tab, newline and carriage return; a scenario name can hold them
// through YAML escapes such as "\x07") replaced by U+FFFD, so that every picture shardsim writes
// is well-formed XML whatever the user named things.
#pragma once

#include <string>
#include <string_view>

namespace shardsim {

[[nodiscard]] std::string xml_escape(std::string_view text);

}  // namespace shardsim
