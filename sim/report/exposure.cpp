#include "report/exposure.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "report/spans.hpp"

namespace shardsim::report {
namespace {

// The walk's order where nothing says which dimension the compute stream waited for.
constexpr std::array<Dimension, kDimensions> kCriticalFirst{Dimension::tp, Dimension::cp, Dimension::pp, Dimension::dp};
// A chain longer than this stops (a step graph's chains are far shorter; a guard, not a limit).
constexpr int kMaxChain = 1'000'000;

bool covers(const std::vector<Span>& spans, double x) {
  const auto it = std::upper_bound(spans.begin(), spans.end(), x, [](double v, const Span& s) { return v < s.first; });
  return it != spans.begin() && x < std::prev(it)->second;
}

class Attribution {
 public:
  Attribution(const graph::StepGraph& g, const graph::Timeline& t, int rank, bool spans) : g_(g), t_(t), rank_(rank), spans_(spans) {}

  // Charges the idle gap [a, b) that op `next` ends (-1: the step's end ends it).
  void gap(double a, double b, int next) {
    double upto = b;
    int cur = next;
    for (int steps = 0; cur >= 0 && upto > a && steps < kMaxChain; ++steps) {
      const int gate = gating(cur);
      if (gate < 0) break;
      const graph::Interval& iv = t_.at(gate, rank_);
      if (iv.end <= a) break;
      if (iv.end < upto) unexplained(iv.end, upto);  // `cur` waited for something besides `gate`
      const double from = std::max(a, iv.start);
      if (from < upto && g_.op(gate).is_collective()) {
        charge(dimension_of(g_.op(gate)), from, std::min(upto, iv.end), gate);
      } else if (from < upto) {
        unexplained(from, std::min(upto, iv.end));
      }
      upto = std::min(upto, from);
      // Before a pipeline transfer began, the compute stream waited for the other stage's
      // compute: the pipeline's bubble (pipeline_bubble.hpp), not any collective's exposed time.
      if (g_.op(gate).is_collective() && g_.op(gate).group == graph::Group::pp) return;
      cur = gate;
    }
    if (upto > a) unexplained(a, upto);
  }

  void add_collective(Dimension d, Span s) { running_[static_cast<std::size_t>(d)].push_back(s); }
  void finish_collectives() {
    for (auto& r : running_) r = merged(std::move(r));
  }
  [[nodiscard]] ExposedComm result() const { return out_; }

 private:
  // The predecessor of `id` that ran on this rank and ended last (-1: none ran here).
  [[nodiscard]] int gating(int id) const {
    int best = -1;
    double latest = -1;
    for (const auto& [pred, kind] : g_.predecessors(id)) {
      const graph::Interval& iv = t_.at(pred, rank_);
      if (iv.start < 0 || iv.end < iv.start) continue;
      if (iv.end > latest) {
        latest = iv.end;
        best = pred;
      }
    }
    return best;
  }

  void charge(Dimension d, double from, double to, int op) {
    out_.by_dimension[static_cast<std::size_t>(d)] += to - from;
    out_.total += to - from;
    if (spans_) out_.spans.push_back({from, to, d, op});
  }

  // [lo, hi) of idle time the chain does not pin on a collective: where collectives run, to the
  // first running dimension in kCriticalFirst.
  void unexplained(double lo, double hi) {
    if (hi <= lo) return;
    std::vector<double> cuts{lo, hi};
    for (const auto& spans : running_) {
      // The merged spans that reach into [lo, hi): from the first ending after lo.
      auto it = std::upper_bound(spans.begin(), spans.end(), lo, [](double v, const Span& sp) { return v < sp.second; });
      for (; it != spans.end() && it->first < hi; ++it) {
        if (it->first > lo) cuts.push_back(it->first);
        if (it->second < hi) cuts.push_back(it->second);
      }
    }
    std::sort(cuts.begin(), cuts.end());
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      const double mid = (cuts[i] + cuts[i + 1]) / 2;
      for (Dimension d : kCriticalFirst) {
        if (covers(running_[static_cast<std::size_t>(d)], mid)) {
          charge(d, cuts[i], cuts[i + 1], -1);
          break;
        }
      }
    }
  }

  const graph::StepGraph& g_;
  const graph::Timeline& t_;
  int rank_;
  bool spans_;
  std::array<std::vector<Span>, kDimensions> running_;
  ExposedComm out_;
};

}  // namespace

std::string_view to_string(Dimension d) {
  static constexpr std::array<std::string_view, kDimensions> kNames{"dp", "tp", "pp", "cp"};
  return kNames[static_cast<std::size_t>(d)];
}

Dimension dimension_of(const graph::Op& collective) {
  switch (collective.group) {
    case graph::Group::tp:
      return Dimension::tp;
    case graph::Group::pp:
      return Dimension::pp;
    case graph::Group::cp:
      return Dimension::cp;
    default:
      return Dimension::dp;
  }
}

ExposedComm exposed_comm(const graph::StepGraph& g, const graph::Timeline& t, int rank, int step, double start, double end, bool spans) {
  Attribution a(g, t, rank, spans);
  std::vector<std::pair<Span, int>> compute;                    // (clipped interval, op)
  for (const int id : g.ops_on_stage(g.info.stage_of(rank))) {  // another stage's ops take no time here
    const graph::Op& op = g.op(id);
    if (op.step != step) continue;
    const graph::Interval& iv = t.at(op.id, rank);
    const Span s{std::clamp(iv.start, start, end), std::clamp(iv.end, start, end)};
    if (s.second <= s.first) continue;
    if (op.is_collective()) {
      a.add_collective(dimension_of(op), s);
    } else if (op.stream == graph::Stream::compute) {
      compute.emplace_back(s, op.id);
    }
  }
  a.finish_collectives();
  std::sort(compute.begin(), compute.end());
  double idle_since = start;
  for (const auto& [s, id] : compute) {
    if (s.first > idle_since) a.gap(idle_since, s.first, id);
    idle_since = std::max(idle_since, s.second);
  }
  if (end > idle_since) a.gap(idle_since, end, -1);
  return a.result();
}

}  // namespace shardsim::report
