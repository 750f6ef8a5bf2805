#include "sweep/result.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "sweep/grid.hpp"

namespace shardsim::sweep {
namespace {

// RFC 4180: quote fields holding separators, quotes, line breaks or edge spaces.
std::string csv_field(std::string_view s) {
  const bool quote = s.find_first_of(",\"\r\n") != std::string_view::npos || (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) return std::string(s);
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_value(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_field(v.get<std::string>());
  return csv_field(v.dump());
}

}  // namespace

double PointResult::number(std::string_view key) const {
  const auto it = metrics.find(key);
  if (it == metrics.end() || !it->is_number()) return std::numeric_limits<double>::quiet_NaN();
  return it->get<double>();
}

double PointResult::allocator_memory() const {
  double outside = 0;
  const auto it = metrics.find("outside_allocator_bytes");
  if (it != metrics.end() && it->is_object()) {
    for (const char* part : {"cuda_context", "nccl"}) {
      const auto v = it->find(part);
      if (v != it->end() && v->is_number()) outside += v->get<double>();
    }
  }
  return number("gpu_memory_bytes") - outside;
}

bool PointResult::oom() const {
  const auto it = metrics.find("oom");
  if (it != metrics.end() && it->is_boolean() && it->get<bool>()) return true;
  // Fitting only by releasing the allocator's cache (synchronizing each time) is not fitting: the
  // simulated time leaves those stalls out.
  const auto retries = metrics.find("alloc_retries");
  return retries != metrics.end() && retries->is_number() && retries->get<double>() > 0;
}

std::string jsonl_line(const PointResult& r) {
  nlohmann::ordered_json row;
  row["point"] = r.index;
  row["set"] = r.assignments;
  row["status"] = r.ok() ? "ok" : "error";
  if (!r.ok()) row["error"] = r.error;
  for (const auto& [k, v] : r.metrics.items()) row[k] = v;
  return row.dump();
}

std::optional<PointResult> parse_jsonl_line(std::string_view line) {
  const auto row = nlohmann::json::parse(line, nullptr, false);
  if (row.is_discarded() || !row.is_object()) return std::nullopt;
  const auto point = row.find("point");
  const auto set = row.find("set");
  const auto status = row.find("status");
  if (point == row.end() || !point->is_number_unsigned() || set == row.end() || !set->is_array() || status == row.end() ||
      !status->is_string()) {
    return std::nullopt;
  }
  PointResult r;
  r.index = point->get<std::size_t>();
  for (const auto& a : *set) {
    if (!a.is_string()) return std::nullopt;
    r.assignments.push_back(a.get<std::string>());
  }
  if (status->get<std::string>() == "error") {
    const auto e = row.find("error");
    if (e == row.end() || !e->is_string() || e->get<std::string>().empty()) return std::nullopt;
    r.error = e->get<std::string>();
  } else if (status->get<std::string>() != "ok") {
    return std::nullopt;
  }
  for (const auto& [k, v] : row.items()) {
    if (k != "point" && k != "set" && k != "status" && k != "error") r.metrics[k] = v;
  }
  return r;
}

std::string value_of(const PointResult& r, std::string_view key) {
  for (const auto& a : r.assignments) {
    auto [k, v] = split_assignment(a);
    if (k == key) return v;
  }
  return "";
}

std::string csv_header(std::span<const std::string> keys) {
  std::string out = "point";
  for (const auto& k : keys) out += "," + csv_field(k);
  out += ",status";
  for (const auto c : kMetricColumns) out += fmt::format(",{}", c);
  return out + ",error\n";
}

std::string csv_row(const PointResult& r, std::span<const std::string> keys) {
  std::string out = std::to_string(r.index);
  for (const auto& k : keys) out += "," + csv_field(value_of(r, k));
  out += r.ok() ? ",ok" : ",error";
  for (const auto c : kMetricColumns) {
    const auto it = r.metrics.find(c);
    out += "," + (it == r.metrics.end() ? std::string() : csv_value(*it));
  }
  return out + "," + csv_field(r.error) + "\n";
}

ReadResults read_jsonl(const std::filesystem::path& file) {
  ReadResults out;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return out;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw RuntimeError(fmt::format("{}: cannot read: {}", file.string(), std::strerror(errno)));
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  std::size_t start = 0;
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    if (nl == std::string::npos) {
      out.torn_tail = true;  // appends are whole lines ending in '\n'; this one was cut short
      break;
    }
    const std::string_view line(text.data() + start, nl - start);
    if (!line.empty()) {
      if (auto r = parse_jsonl_line(line)) {
        out.rows.push_back(std::move(*r));
      } else {
        ++out.damaged;
      }
    }
    start = nl + 1;
  }
  return out;
}

}  // namespace shardsim::sweep
