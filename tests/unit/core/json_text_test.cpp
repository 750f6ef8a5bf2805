#include "core/json_text.hpp"

#include <doctest/doctest.h>

using namespace shardsim;

TEST_CASE("the same key in different objects is fine, but twice in one object is an error at the second") {
  // Objects in a list and nested objects each have their own keys; strings holding quotes,
  // braces and colons are not keys.
  const auto j = parse_json(R"({"a": [{"k": 1}, {"k": 2}], "b": {"a": "x\": {"}, "c": "}{:"})", "f.json", "a test file");
  CHECK(j["a"][1]["k"] == 2);
  CHECK_THROWS_WITH_AS((void)parse_json("{\n  \"k\": 1,\n  \"n\": {\"k\": 2},\n  \"k\": 3\n}", "f.json", "a test file"),
                       "f.json:4:3: error: k: duplicate key (first at line 2, column 3); expected each key once per object", ConfigError);
}

TEST_CASE("syntax errors and numbers out of range name the line and column") {
  CHECK_THROWS_WITH_AS((void)parse_json("{\n  \"k\": 1,,\n}", "f.json", "a test file"),
                       "f.json:2:10: error: invalid JSON (expected a test file): syntax error while parsing object key - unexpected ','; "
                       "expected string literal",
                       ConfigError);
  CHECK_THROWS_WITH_AS((void)parse_json("{\"k\":\n 1e999}", "f.json", "a test file"),
                       "f.json:2:2: error: invalid JSON: number out of range: \"1e999\"", ConfigError);
}
