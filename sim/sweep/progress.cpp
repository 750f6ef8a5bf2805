#include "sweep/progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sweep/svg.hpp"

namespace shardsim::sweep {

std::optional<double> eta_seconds(std::size_t done, std::size_t total, double elapsed) {
  if (done == 0) return std::nullopt;
  return elapsed / static_cast<double>(done) * static_cast<double>(total - std::min(done, total));
}

std::string format_duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::vector<std::string> point_warnings(const PointResult& r) {
  std::vector<std::string> out;
  if (const auto w = r.metrics.find("warnings"); w != r.metrics.end() && w->is_array()) {
    for (const auto& text : *w) {
      if (text.is_string()) out.push_back(text.get<std::string>());
    }
  }
  return out;
}

std::string describe_result(const PointResult& r, std::vector<std::string>* shown) {
  std::string settings;
  for (const auto& a : r.assignments) settings += (settings.empty() ? "" : " ") + a;
  if (settings.empty()) settings = "(the scenario as written)";
  if (!r.ok()) return fmt::format("{}: failed: {}", settings, r.error);
  std::string line =
      fmt::format("{}: {}, {:.0f} tokens/s/GPU, {}{}", settings, svg::seconds(r.number("step_time_s")), r.number("tokens_per_s_per_gpu"),
                  svg::gib(r.number("peak_memory_bytes")), r.oom() ? " OUT OF MEMORY" : "");
  std::size_t again = 0;
  for (const auto& text : point_warnings(r)) {
    if (shown != nullptr && std::find(shown->begin(), shown->end(), text) != shown->end()) {
      ++again;
      continue;
    }
    if (shown != nullptr) shown->push_back(text);
    line += "\n    " + text;
  }
  if (again > 0) line += fmt::format(" [{} warning{} as above]", again, again == 1 ? "" : "s");
  return line;
}

Progress::Progress(std::FILE* out, bool terminal, std::string how) : out_(out), terminal_(terminal), how_(std::move(how)) {}

void Progress::started(std::size_t to_run, std::size_t already_done) {
  fmt::print(out_, "sweep: {} point{} to run ({} already done), {}\n", to_run, to_run == 1 ? "" : "s", already_done, how_);
  total_ = to_run;
  done_ = failed_ = 0;
  warnings_.clear();
  repeated_ = false;
  start_ = std::chrono::steady_clock::now();
}

void Progress::finished(const PointResult& r) {
  ++done_;
  failed_ += r.ok() ? 0 : 1;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const auto eta = eta_seconds(done_, total_, elapsed);
  const std::string eta_text = eta ? format_duration(*eta) : "?";
  if (terminal_) {
    constexpr std::size_t kWidth = 30;
    const std::size_t filled = total_ == 0 ? kWidth : kWidth * done_ / total_;
    fmt::print(out_, "\r[{}{}] {}/{}  {} failed  {:.1f} points/s  ETA {}\033[K", std::string(filled, '#'),
               std::string(kWidth - filled, '-'), done_, total_, failed_, elapsed > 0 ? static_cast<double>(done_) / elapsed : 0.0,
               eta_text);
  } else {
    std::vector<std::string> shown;
    for (const auto& [text, n] : warnings_) shown.push_back(text);
    fmt::print(out_, "[{}/{}] {} (ETA {})\n", done_, total_, describe_result(r, &shown), eta_text);
  }
  for (const auto& text : point_warnings(r)) {
    auto it = std::find_if(warnings_.begin(), warnings_.end(), [&](const auto& w) { return w.first == text; });
    if (it == warnings_.end()) {
      warnings_.emplace_back(text, 1);
    } else {
      ++it->second;
      repeated_ = true;
    }
  }
  std::fflush(out_);
}

void Progress::ended() {
  if (terminal_ && total_ > 0) fmt::print(out_, "\n");
  if (!warnings_.empty() && (terminal_ || repeated_)) {
    fmt::print(out_, "settings that did not apply (results.jsonl keeps each point's):\n");
    for (const auto& [text, n] : warnings_) fmt::print(out_, "  {} of {} point{}: {}\n", n, done_, done_ == 1 ? "" : "s", text);
  }
  std::fflush(out_);
}

}  // namespace shardsim::sweep
