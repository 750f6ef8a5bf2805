#include "core/units.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "core/error.hpp"

namespace shardsim {
namespace {

struct UnitDef {
  std::string_view name;
  double factor;  // to base units
};

// Decimal prefixes follow SI (1 GB = 1e9 B), binary ones IEC (1 GiB = 2^30 B). Network rates
// are usually quoted in bits ("400Gbps" = 50e9 B/s), memory and NVLink in bytes ("450GB/s").
constexpr std::array kBytes{
    UnitDef{"B", 1.0},    UnitDef{"KB", 1e3},         UnitDef{"MB", 1e6},         UnitDef{"GB", 1e9},
    UnitDef{"TB", 1e12},  UnitDef{"PB", 1e15},        UnitDef{"KiB", kKiB},       UnitDef{"MiB", kMiB},
    UnitDef{"GiB", kGiB}, UnitDef{"TiB", kGiB* kKiB}, UnitDef{"PiB", kGiB* kMiB},
};
constexpr std::array kSeconds{
    UnitDef{"s", 1.0},   UnitDef{"ms", 1e-3},  UnitDef{"us", 1e-6},  UnitDef{"µs", 1e-6},
    UnitDef{"ns", 1e-9}, UnitDef{"min", 60.0}, UnitDef{"h", 3600.0},
};
constexpr std::array kFlops{
    UnitDef{"FLOP", 1.0},   UnitDef{"KFLOP", 1e3},  UnitDef{"MFLOP", 1e6},  UnitDef{"GFLOP", 1e9},
    UnitDef{"TFLOP", 1e12}, UnitDef{"PFLOP", 1e15}, UnitDef{"EFLOP", 1e18},
};
constexpr std::array kByteRates{
    UnitDef{"B/s", 1.0},      UnitDef{"KB/s", 1e3},     UnitDef{"MB/s", 1e6},     UnitDef{"GB/s", 1e9},         UnitDef{"TB/s", 1e12},
    UnitDef{"KiB/s", kKiB},   UnitDef{"MiB/s", kMiB},   UnitDef{"GiB/s", kGiB},   UnitDef{"TiB/s", kGiB* kKiB}, UnitDef{"bps", 1.0 / 8},
    UnitDef{"Kbps", 1e3 / 8}, UnitDef{"Mbps", 1e6 / 8}, UnitDef{"Gbps", 1e9 / 8}, UnitDef{"Tbps", 1e12 / 8},    UnitDef{"b/s", 1.0 / 8},
    UnitDef{"Kb/s", 1e3 / 8}, UnitDef{"Mb/s", 1e6 / 8}, UnitDef{"Gb/s", 1e9 / 8}, UnitDef{"Tb/s", 1e12 / 8},
};
constexpr std::array kFlopRates{
    UnitDef{"FLOPS", 1.0},   UnitDef{"KFLOPS", 1e3}, UnitDef{"MFLOPS", 1e6},  UnitDef{"GFLOPS", 1e9},   UnitDef{"TFLOPS", 1e12},
    UnitDef{"PFLOPS", 1e15}, UnitDef{"FLOP/s", 1.0}, UnitDef{"GFLOP/s", 1e9}, UnitDef{"TFLOP/s", 1e12}, UnitDef{"PFLOP/s", 1e15},
};

template <std::size_t N>
const UnitDef* find_unit(const std::array<UnitDef, N>& table, std::string_view unit) {
  for (const auto& u : table) {
    if (u.name == unit) return &u;
  }
  return nullptr;
}

const UnitDef* lookup(Dimension d, std::string_view unit) {
  switch (d) {
    case Dimension::bytes:
      return find_unit(kBytes, unit);
    case Dimension::seconds:
      return find_unit(kSeconds, unit);
    case Dimension::flops:
      return find_unit(kFlops, unit);
    case Dimension::byte_rate:
      return find_unit(kByteRates, unit);
    case Dimension::flop_rate:
      return find_unit(kFlopRates, unit);
  }
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Scales a value into the largest prefix that keeps it >= 1 and prints 3 significant digits.
std::string scaled(double v, std::initializer_list<std::pair<double, std::string_view>> steps) {
  for (const auto& [factor, suffix] : steps) {
    if (std::fabs(v) >= factor) return fmt::format("{:.3g} {}", v / factor, suffix);
  }
  const auto& last = *(steps.end() - 1);
  return fmt::format("{:.3g} {}", v / last.first, last.second);
}

}  // namespace

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::bytes:
      return "size";
    case Dimension::seconds:
      return "duration";
    case Dimension::flops:
      return "FLOP count";
    case Dimension::byte_rate:
      return "bandwidth";
    case Dimension::flop_rate:
      return "compute rate";
  }
  return "quantity";
}

std::string_view dimension_example(Dimension d) {
  switch (d) {
    case Dimension::bytes:
      return "80GiB or 25MB";
    case Dimension::seconds:
      return "2us or 1.5ms";
    case Dimension::flops:
      return "1.2TFLOP";
    case Dimension::byte_rate:
      return "400Gbps or 450GB/s";
    case Dimension::flop_rate:
      return "989TFLOPS";
  }
  return "";
}

double parse_quantity(std::string_view text, Dimension d) {
  const std::string_view s = trim(text);
  double number = 0.0;
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(begin, end, number);
  const auto expected = fmt::format("expected a {} such as {}", dimension_name(d), dimension_example(d));
  if (ec != std::errc() || ptr == begin) {
    throw std::invalid_argument(fmt::format("{}; got {}", expected, quote(text)));
  }
  const std::string_view unit = trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)));
  if (unit.empty()) {
    throw std::invalid_argument(fmt::format("{}; got {} without a unit", expected, quote(text)));
  }
  const UnitDef* u = lookup(d, unit);
  if (u == nullptr) {
    throw std::invalid_argument(fmt::format("{}; {} is not a unit of {}", expected, quote(unit), dimension_name(d)));
  }
  if (!std::isfinite(number) || number < 0.0) {
    throw std::invalid_argument(fmt::format("{}; got {} (must be finite and not negative)", expected, quote(text)));
  }
  const double value = number * u->factor;
  if (!std::isfinite(value)) {
    throw std::invalid_argument(fmt::format("{}; {} is out of range", expected, quote(text)));
  }
  return value;
}

std::string format_bytes(Bytes b) {
  return scaled(b.value(), {{kGiB * kKiB, "TiB"}, {kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}, {1.0, "B"}});
}

std::string format_seconds(Seconds s) {
  return scaled(s.value(), {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}});
}

std::string format_byte_rate(ByteRate r) {
  return scaled(r.value(), {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "KB/s"}, {1.0, "B/s"}});
}

std::string format_flop_rate(FlopRate r) {
  return scaled(r.value(), {{1e15, "PFLOPS"}, {1e12, "TFLOPS"}, {1e9, "GFLOPS"}, {1.0, "FLOPS"}});
}

std::string format_quantity(double v, Dimension d) {
  switch (d) {
    case Dimension::bytes:
      return format_bytes(Bytes(v));
    case Dimension::seconds:
      return format_seconds(Seconds(v));
    case Dimension::flops:
      return fmt::format("{:.3g} FLOP", v);
    case Dimension::byte_rate:
      return format_byte_rate(ByteRate(v));
    case Dimension::flop_rate:
      return format_flop_rate(FlopRate(v));
  }
  return fmt::format("{:g}", v);
}

}  // namespace shardsim
