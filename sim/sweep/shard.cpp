#include "sweep/shard.hpp"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "core/error.hpp"

namespace shardsim::sweep {
namespace {

std::optional<std::size_t> number(std::string_view s) {
  std::size_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::string Shard::dir_name() const {
  return fmt::format("shard-{}-of-{}", index, count);
}

Shard parse_shard(std::string_view text) {
  const Location where{fmt::format("--shard {}", text), 0, 0};
  const auto slash = text.find('/');
  const auto i = slash == std::string_view::npos ? std::nullopt : number(text.substr(0, slash));
  const auto n = slash == std::string_view::npos ? std::nullopt : number(text.substr(slash + 1));
  if (!i || !n || *n == 0 || *i >= *n || *n > 1'000'000) {
    throw ConfigError(where, "", "expected I/N with 0 <= I < N, e.g. --shard 0/4 for the first of four shares");
  }
  return Shard{*i, *n};
}

std::vector<Point> shard_points(const std::vector<Point>& all, const Shard& shard) {
  std::vector<Point> out;
  for (const auto& p : all) {
    if (shard.contains(p.index)) out.push_back(p);
  }
  return out;
}

}  // namespace shardsim::sweep
