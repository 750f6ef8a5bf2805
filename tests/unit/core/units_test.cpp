#include "core/units.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace shardsim;

TEST_CASE("unit strings parse to base units") {
  CHECK(parse_bytes("80GiB").value() == doctest::Approx(80.0 * 1024 * 1024 * 1024).scale(0));
  CHECK(parse_bytes("25MB").value() == doctest::Approx(25e6).scale(0));
  CHECK(parse_byte_rate("400Gbps").value() == doctest::Approx(50e9).scale(0));  // 400e9 bits / 8
  CHECK(parse_byte_rate("450GB/s").value() == doctest::Approx(450e9).scale(0));
  CHECK(parse_byte_rate("3.35TB/s").value() == doctest::Approx(3.35e12).scale(0));
  CHECK(parse_seconds("2us").value() == doctest::Approx(2e-6).scale(0));
  CHECK(parse_seconds("1.5ms").value() == doctest::Approx(1.5e-3).scale(0));
  CHECK(parse_flop_rate("989TFLOPS").value() == doctest::Approx(989e12).scale(0));
  CHECK(parse_quantity(" 8 GiB ", Dimension::bytes) == doctest::Approx(8.0 * 1024 * 1024 * 1024).scale(0));
}

TEST_CASE("unit strings without a unit, with the wrong unit or out of range are rejected") {
  CHECK_THROWS_WITH_AS((void)parse_bytes("400"), "expected a size such as 80GiB or 25MB; got \"400\" without a unit",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)parse_bytes("400Gbps"), "expected a size such as 80GiB or 25MB; \"Gbps\" is not a unit of size",
                       std::invalid_argument);
  CHECK_THROWS_AS((void)parse_bytes("-1GB"), std::invalid_argument);
  CHECK_THROWS_AS((void)parse_bytes("nanGB"), std::invalid_argument);
  CHECK_THROWS_AS((void)parse_bytes("1e400GB"), std::invalid_argument);
  CHECK_THROWS_AS((void)parse_seconds("fast"), std::invalid_argument);
}

TEST_CASE("strong types combine only in meaningful ways") {
  const Seconds t = parse_bytes("450GB") / parse_byte_rate("450GB/s");
  CHECK(t.value() == doctest::Approx(1.0).scale(0));
  const Seconds c = Flops(989e12) / parse_flop_rate("989TFLOPS");
  CHECK(c.value() == doctest::Approx(1.0).scale(0));
  CHECK(format_bytes(parse_bytes("82.4GiB")) == "82.4 GiB");
  CHECK(format_seconds(Seconds(0.0456)) == "45.6 ms");
}
