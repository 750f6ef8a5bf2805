#include "validate/nccl_tests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"

namespace shardsim::validate {
namespace {

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::istringstream in{std::string(s)};
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool is_integer(const std::string& s) {
  if (s.empty()) return false;
  const std::size_t start = s[0] == '-' ? 1 : 0;
  return start < s.size() &&
         std::all_of(s.begin() + static_cast<std::ptrdiff_t>(start), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::optional<double> number(const std::string& s) {
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// srun --label prefixes each line with "N: ".
std::string_view strip_label(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  const std::size_t digits = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])) != 0) ++i;
  if (i > digits && i < line.size() && line[i] == ':') return line.substr(i + 1);
  return line;
}

// The 1-based column where the index-th word of the (unstripped) line starts, counting the words
// after an srun label.
int column_of(const std::string& raw, std::string_view stripped, std::size_t index) {
  std::size_t i = static_cast<std::size_t>(stripped.data() - raw.data());
  for (std::size_t w = 0;; ++w) {
    while (i < raw.size() && (raw[i] == ' ' || raw[i] == '\t')) ++i;
    if (w == index || i >= raw.size()) return static_cast<int>(i) + 1;
    while (i < raw.size() && raw[i] != ' ' && raw[i] != '\t') ++i;
  }
}

// A data row: size and count (integers), then a type name.
bool is_row(const std::vector<std::string>& w) {
  return w.size() >= 7 && is_integer(w[0]) && is_integer(w[1]) && std::isalpha(static_cast<unsigned char>(w[2][0])) != 0;
}

double factor(ActivityClass c, int n) {
  const double f = static_cast<double>(n - 1) / n;
  return c == ActivityClass::all_reduce ? 2 * f : f;
}

std::optional<ActivityClass> collective_named(const std::string& text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t.find("all_reduce") != std::string::npos || t.find("allreduce") != std::string::npos) return ActivityClass::all_reduce;
  if (t.find("all_gather") != std::string::npos || t.find("allgather") != std::string::npos) return ActivityClass::all_gather;
  if (t.find("reduce_scatter") != std::string::npos || t.find("reducescatter") != std::string::npos) return ActivityClass::reduce_scatter;
  if (t.find("alltoall") != std::string::npos || t.find("all_to_all") != std::string::npos) return ActivityClass::all_to_all;
  return std::nullopt;
}

struct RawRow {
  NcclTestsRow row;
  double algbw_oop = 0;  // GB/s as printed
  std::string redop;     // "" when the log has no redop column
};

// The row's figures: the last 8 words are time, algbw, busbw, #wrong out of place, then in
// place (4 when only one set is printed); redop is the word after the type when there is one.
RawRow read_row(const std::vector<std::string>& w, const std::string& file, int line, const std::string& raw, std::string_view stripped) {
  auto where = [&](std::size_t word) { return Location{file, line, column_of(raw, stripped, word)}; };
  const std::size_t n = w.size();
  const std::size_t tail = n >= 11 ? 8 : 4;
  auto at = [&](std::size_t i) {
    const auto v = number(w[i]);
    if (!v || *v < 0) {
      throw ConfigError(where(i), "", fmt::format("expected a number (word {} of this nccl-tests row); got \"{}\"", i + 1, w[i]));
    }
    return *v;
  };
  RawRow r;
  r.row.line = line;
  r.row.column = column_of(raw, stripped, 0);
  r.row.bytes = at(0);
  const std::size_t oop = n - tail;
  r.row.time_oop = at(oop) * 1e-6;
  r.algbw_oop = at(oop + 1);
  r.row.busbw_oop = at(oop + 2) * 1e9;
  if (tail == 8) r.row.time_ip = at(oop + 4) * 1e-6;
  if (oop > 3 && !is_integer(w[3])) r.redop = w[3];
  if (r.row.time_oop <= 0) throw ConfigError(where(oop), "", "a time of 0 us; expected a measured time");
  // algbw = S / t: the columns were read right.
  const double algbw = r.row.bytes / r.row.time_oop / 1e9;
  if (std::fabs(algbw - r.algbw_oop) > 0.011 + 0.01 * algbw) {
    throw ConfigError(where(oop + 1), "",
                      fmt::format("algbw {} GB/s but size / time = {:.4g} GB/s; expected nccl-tests rows of size, count, type, [redop, "
                                  "root,] time (us), algbw, busbw, #wrong",
                                  w[oop + 1], algbw));
  }
  return r;
}

bool consistent(const std::vector<RawRow>& rows, ActivityClass c, int n) {
  for (const auto& r : rows) {
    const double busbw = r.row.busbw_oop / 1e9;
    if (std::fabs(busbw - r.algbw_oop * factor(c, n)) > 0.011 + 0.011 * factor(c, n) + 0.002 * busbw) return false;
  }
  return true;
}

// The rank count busbw / algbw implies, if exactly one count between 2 and 4096 fits every row.
std::optional<int> ranks_from_bandwidths(const std::vector<RawRow>& rows, ActivityClass c) {
  std::optional<int> found;
  std::vector<RawRow> precise;
  for (const auto& r : rows) {
    if (r.algbw_oop >= 1.0) precise.push_back(r);  // two decimals of a figure >= 1 GB/s: 1 % at worst
  }
  if (precise.empty()) return std::nullopt;
  const double ratio = precise.front().row.busbw_oop / 1e9 / precise.front().algbw_oop;
  const double base = c == ActivityClass::all_reduce ? 2.0 : 1.0;
  if (ratio >= base) return std::nullopt;
  const double estimate = base / (base - ratio);
  for (int n = std::max(2, static_cast<int>(estimate * 0.8)); n <= std::min(4096, static_cast<int>(estimate * 1.25) + 1); ++n) {
    if (!consistent(precise, c, n)) continue;
    if (found) return std::nullopt;  // two counts fit: ambiguous
    found = n;
  }
  return found;
}

}  // namespace

bool looks_like_nccl_tests(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (is_row(words(strip_label(line)))) return true;
  }
  return false;
}

NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& file, const NcclTestsHints& hints) {
  NcclTestsLog log;
  log.file = file;
  std::vector<RawRow> rows;
  std::map<int, std::string> hosts;  // "#  Rank N ... on HOST device D [bus] NAME"
  std::optional<ActivityClass> from_command;
  std::istringstream in(text);
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string_view line = strip_label(raw);
    const auto w = words(line);
    if (w.empty()) continue;
    if (raw.find("_perf") != std::string::npos && !from_command) from_command = collective_named(raw);
    if (w[0] == "#") {
      if (w.size() >= 9 && w[1] == "Rank" && is_integer(w[2]) && w[7] == "on") {
        hosts[std::stoi(w[2])] = w[8];
        const auto bracket = line.find(']');
        if (bracket != std::string_view::npos && log.device.empty()) log.device = std::string(line.substr(bracket + 1));
        log.device.erase(0, log.device.find_first_not_of(' '));
      }
      continue;
    }
    if (!is_row(w)) continue;
    rows.push_back(read_row(w, file, line_no, raw, line));
  }
  if (rows.empty()) {
    throw ConfigError(Location{file, 0, 0}, "",
                      "no nccl-tests rows; expected the output of all_gather_perf, reduce_scatter_perf, all_reduce_perf or alltoall_perf "
                      "(rows of size, count, type, [redop, root,] time, algbw, busbw, #wrong)");
  }
  // The collective.
  const std::string name = std::filesystem::path(file).filename().string();
  if (hints.collective) {
    log.collective = *hints.collective;
    log.collective_from = "--collective";
  } else if (from_command) {
    log.collective = *from_command;
    log.collective_from = "the command line in the log";
  } else if (const auto c = collective_named(name)) {
    log.collective = *c;
    log.collective_from = "the file name";
  } else {
    throw ConfigError(Location{file, 0, 0}, "",
                      "cannot tell which collective was measured (no *_perf command line in the log, no all_reduce / all_gather / "
                      "reduce_scatter / alltoall in the file name); expected --collective all_reduce|all_gather|reduce_scatter|all_to_all");
  }
  const bool reduces = log.collective == ActivityClass::all_reduce || log.collective == ActivityClass::reduce_scatter;
  for (const auto& r : rows) {
    if (!r.redop.empty() && (r.redop != "none") != reduces) {
      throw ConfigError(Location{file, r.row.line, r.row.column}, "",
                        fmt::format("redop \"{}\" in a log of {} (by {}); expected {}", r.redop, to_string(log.collective),
                                    log.collective_from, reduces ? "a reduction (sum, ...)" : "none"));
    }
  }
  // Ranks and nodes.
  if (!hosts.empty()) {
    log.ranks = hosts.rbegin()->first + 1;  // logs often list the first and last ranks only
    log.ranks_from = "the log's header";
    std::set<std::string> distinct;
    for (const auto& [r, h] : hosts) distinct.insert(h);
    log.nodes = static_cast<int>(distinct.size());
    log.nodes_from = "the log's header";
    // --ranks / --nodes are for logs without a header (several logs may be given at once).
    if (hints.ranks && *hints.ranks != log.ranks) {
      log.notes.push_back(fmt::format("--ranks {} not used: the header lists ranks up to {}", *hints.ranks, log.ranks - 1));
    }
    if (hints.nodes && *hints.nodes != log.nodes) {
      log.notes.push_back(
          fmt::format("--nodes {} not used: the header shows {} host{}", *hints.nodes, log.nodes, log.nodes == 1 ? "" : "s"));
    }
  } else {
    if (hints.ranks) {
      log.ranks = *hints.ranks;
      log.ranks_from = "--ranks";
    } else if (const auto n = ranks_from_bandwidths(rows, log.collective)) {
      log.ranks = *n;
      log.ranks_from = "busbw / algbw";
    } else {
      throw ConfigError(Location{file, 0, 0}, "",
                        "cannot tell how many ranks ran: the log has no \"#  Rank\" lines and busbw / algbw does not single out one "
                        "count; expected --ranks N");
    }
    if (!hints.nodes) {
      throw ConfigError(Location{file, 0, 0}, "",
                        fmt::format("cannot tell how many nodes the {} ranks were on: the log has no \"#  Rank ... on HOST\" lines; "
                                    "expected --nodes N",
                                    log.ranks));
    }
    log.nodes = *hints.nodes;
    log.nodes_from = "--nodes";
  }
  if (log.ranks < 2 || log.nodes < 1 || log.ranks % log.nodes != 0) {
    throw ConfigError(Location{file, 0, 0}, "",
                      fmt::format("{} ranks on {} nodes; expected at least 2 ranks, the same number on every node", log.ranks, log.nodes));
  }
  if (!consistent(rows, log.collective, log.ranks)) {
    throw ConfigError(Location{file, rows.front().row.line, rows.front().row.column}, "",
                      fmt::format("busbw / algbw = {:.4f}, not nccl-tests' factor for {} over {} ranks ({:.4f}); expected the rank count "
                                  "the run had ({} by {})",
                                  rows.front().row.busbw_oop / 1e9 / rows.front().algbw_oop, to_string(log.collective), log.ranks,
                                  factor(log.collective, log.ranks), log.ranks, log.ranks_from));
  }
  for (auto& r : rows) log.rows.push_back(r.row);
  return log;
}

}  // namespace shardsim::validate
