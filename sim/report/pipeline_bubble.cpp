#include "report/pipeline_bubble.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace shardsim::report {

double pipeline_bubble(const graph::StepGraph& g, const graph::Timeline& t, int rank, double start, double end) {
  const int stage = g.info.stage_of(rank);
  // When the latest pipeline send feeding op `id` ended on this rank, -1 if none does.
  const auto stage_send = [&](int id) { return g.op(id).kind == graph::OpKind::send && g.op(id).group == graph::Group::pp; };
  const auto fed_by_send = [&](int id) {
    double latest = -1;
    for (const auto& [pred, kind] : g.predecessors(id)) {
      const graph::Op& p = g.op(pred);
      if (stage_send(pred)) latest = std::max(latest, t.at(pred, rank).end);
      if (p.group != graph::Group::tp) continue;
      for (const auto& [pp, k2] : g.predecessors(pred)) {
        if (stage_send(pp)) latest = std::max(latest, t.at(pp, rank).end);
      }
    }
    return latest;
  };
  std::vector<std::pair<double, int>> compute;  // (start, op)
  double done = start;                          // when the stage's last op of the step ended
  for (const int id : g.ops_on_stage(stage)) {
    const graph::Op& op = g.op(id);
    const graph::Interval& i = t.at(op.id, rank);
    if (i.end <= start || i.start >= end) continue;
    done = std::max(done, std::min(i.end, end));
    if (op.stream == graph::Stream::compute && !op.is_collective()) compute.emplace_back(i.start, op.id);
  }
  std::sort(compute.begin(), compute.end());
  double idle = 0;
  double free_since = start;  // when the compute stream last went idle
  for (const auto& [begin, id] : compute) {
    const double sent = fed_by_send(id);
    if (begin > free_since && sent > free_since) idle += std::min(begin, sent) - free_since;
    free_since = std::max(free_since, t.at(id, rank).end);
  }
  // A stage that is through waits for the others to end the step (the last stage in 1F1B's
  // cool-down): that is bubble too.
  return idle + (end - done);
}

}  // namespace shardsim::report
