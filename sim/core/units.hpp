// Strong unit types for the quantities shardsim reasons about, and the one place where unit
// strings from YAML ("400Gbps", "2us", "80GiB", "989TFLOPS") are parsed.
//
//   Bytes b = parse_bytes("80GiB");          // 85899345920 bytes
//   Seconds t = b / parse_byte_rate("450GB/s");
#pragma once

#include <compare>
#include <string>
#include <string_view>

namespace shardsim {

// A double tagged with its dimension, so that bytes cannot be added to seconds by mistake.
template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double value) : value_(value) {}
  [[nodiscard]] constexpr double value() const { return value_; }

  constexpr Quantity& operator+=(Quantity o) {
    value_ += o.value_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    value_ -= o.value_;
    return *this;
  }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.value_ + b.value_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.value_ - b.value_); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.value_ / k); }
  friend constexpr double operator/(Quantity a, Quantity b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;

 private:
  double value_ = 0.0;
};

struct BytesTag {};
struct SecondsTag {};
struct FlopsTag {};
struct ByteRateTag {};
struct FlopRateTag {};

using Bytes = Quantity<BytesTag>;        // bytes
using Seconds = Quantity<SecondsTag>;    // seconds
using Flops = Quantity<FlopsTag>;        // floating-point operations
using ByteRate = Quantity<ByteRateTag>;  // bytes per second
using FlopRate = Quantity<FlopRateTag>;  // floating-point operations per second

constexpr Seconds operator/(Bytes b, ByteRate r) {
  return Seconds(b.value() / r.value());
}
constexpr Seconds operator/(Flops f, FlopRate r) {
  return Seconds(f.value() / r.value());
}
constexpr Bytes operator*(ByteRate r, Seconds t) {
  return Bytes(r.value() * t.value());
}
constexpr Flops operator*(FlopRate r, Seconds t) {
  return Flops(r.value() * t.value());
}

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * kKiB;
constexpr double kGiB = 1024.0 * kMiB;

// What a unit string measures; used in messages ("expected a bandwidth such as 400Gbps").
enum class Dimension { bytes, seconds, flops, byte_rate, flop_rate };

[[nodiscard]] std::string_view dimension_name(Dimension d);
[[nodiscard]] std::string_view dimension_example(Dimension d);

// Parses "<number><unit>" of the given dimension and returns the value in base units
// (bytes, seconds, FLOPs, bytes/s, FLOP/s). Throws std::invalid_argument with a message that
// says what was expected; the config layer adds file, line and key. A bare number is rejected:
// "400" could be bits or bytes, seconds or microseconds.
[[nodiscard]] double parse_quantity(std::string_view text, Dimension d);

[[nodiscard]] inline Bytes parse_bytes(std::string_view t) {
  return Bytes(parse_quantity(t, Dimension::bytes));
}
[[nodiscard]] inline Seconds parse_seconds(std::string_view t) {
  return Seconds(parse_quantity(t, Dimension::seconds));
}
[[nodiscard]] inline ByteRate parse_byte_rate(std::string_view t) {
  return ByteRate(parse_quantity(t, Dimension::byte_rate));
}
[[nodiscard]] inline FlopRate parse_flop_rate(std::string_view t) {
  return FlopRate(parse_quantity(t, Dimension::flop_rate));
}

// Human-readable forms for reports: "82.4 GiB", "2.84 s", "45.6 ms", "360 GB/s", "989 TFLOPS".
[[nodiscard]] std::string format_bytes(Bytes b);
[[nodiscard]] std::string format_seconds(Seconds s);
[[nodiscard]] std::string format_byte_rate(ByteRate r);
[[nodiscard]] std::string format_flop_rate(FlopRate r);
// Any of the above by dimension ("20 us", "80 GiB", "1e+03 FLOP").
[[nodiscard]] std::string format_quantity(double v, Dimension d);

}  // namespace shardsim
