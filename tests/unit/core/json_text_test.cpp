#include "core/json_text.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <string>

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

TEST_CASE("JSON written as text: numbers read back exactly, non-finite ones as null, strings escaped") {
  std::string out;
  for (const double v : {0.1, 5.0, -2.5e-7, 0.17557313463627441, 1e300}) {
    out.clear();
    append_json_number(out, v);
    CHECK(nlohmann::json::parse(out).get<double>() == v);  // the same double back
  }
  out.clear();
  append_json_number(out, 5.0);
  CHECK(out == "5");
  out.clear();
  append_json_number(out, std::numeric_limits<double>::quiet_NaN());
  out += ',';
  append_json_number(out, std::numeric_limits<double>::infinity());
  CHECK(out == "null,null");
  out.clear();
  append_json_string(out, "a \"quoted\"\nname\\");
  CHECK(out == R"("a \"quoted\"\nname\\")");
  out.clear();
  append_json_string(out, std::string("bad \xff byte"));  // not UTF-8: replaced, not thrown
  CHECK(nlohmann::json::parse(out).get<std::string>() == "bad \xEF\xBF\xBD byte");
}
