#include "config/yaml_load.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

using namespace shardsim;

namespace {
const Location kFile{"x.yaml", 0, 0};
}

TEST_CASE("valid UTF-8 passes, anything else is located at its first bad byte") {
  CHECK_NOTHROW((void)config::parse_yaml("name: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80\n", kFile));  // é € 🚀
  CHECK_NOTHROW((void)config::parse_yaml("\xef\xbb\xbfname: x\r\n", kFile));                            // BOM, CRLF
  CHECK_THROWS_WITH_AS((void)config::parse_yaml("a: 1\nb: \xc0\xaf\n", kFile),
                       "x.yaml:2:4: error: not valid UTF-8 (byte 0xc0); expected YAML text",
                       ConfigError);  // overlong "/"
  CHECK_THROWS_WITH_AS((void)config::parse_yaml("a: \xed\xa0\x80\n", kFile),
                       "x.yaml:1:4: error: not valid UTF-8 (byte 0xed); expected YAML text",
                       ConfigError);  // a UTF-16 surrogate
  CHECK_THROWS_WITH_AS((void)config::parse_yaml("a: \xe2\x82", kFile), "x.yaml:1:4: error: not valid UTF-8 (byte 0xe2); expected YAML text",
                       ConfigError);  // cut short at the end
  CHECK_THROWS_WITH_AS((void)config::parse_yaml("a: 1\x1b[0m\n", kFile),
                       "x.yaml:1:5: error: not a text file (control byte 0x1b); expected YAML text", ConfigError);
}

TEST_CASE("aliases may repeat values, but not without bound") {
  const ConfigNode n = config::parse_yaml("a: &a {x: 1, y: 2}\nb: *a\nc: [*a, *a]\n", kFile);
  REQUIRE(n.find("c") != nullptr);
  CHECK(n.find("c")->items.size() == 2);
  CHECK(n.find("c")->items[1].find("y")->scalar == "2");
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'g'; ++c) {
    const char prev = static_cast<char>(c - 1);
    bomb += fmt::format("{0}: &{0} [*{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}]\n", c, prev);
  }
  CHECK_THROWS_WITH_AS((void)config::parse_yaml(bomb, kFile),
                       "x.yaml:5:4: error: e: more than 100000 values once aliases are expanded; expected a configuration of a few hundred "
                       "values (aliases that repeat lists of aliases?)",
                       ConfigError);
}

TEST_CASE("a --set value is located on the command line, line and column within the value") {
  const Location where{"--set a=[1, 2", 0, 0};
  CHECK_THROWS_WITH_AS((void)config::parse_yaml("[1, 2", where), "--set a=[1, 2:1:1: error: invalid YAML: end of sequence flow not found",
                       ConfigError);
}
