#include "report/cpu_issue.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>

namespace shardsim::report {

std::vector<double> cpu_issue_times(const graph::StepGraph& g, const graph::Timeline& t, int rank, const IssueRules& rules) {
  struct Pending {
    std::int64_t first;  // the index of the op's first kernel among all launched (from 1)
    double end;          // when the GPU finishes its kernels
  };
  std::vector<double> issue(g.size(), -1.0);
  std::deque<Pending> pending;
  std::int64_t launched = 0;
  double cpu = 0;      // the CPU thread's clock
  double drained = 0;  // the latest end among ops that left the launch queue
  const int stage = g.info.stage_of(rank);
  for (const int id : g.ops_on_stage(stage)) {  // not another pipeline stage's program
    const auto o = static_cast<std::size_t>(id);
    const graph::Op& op = g.op(id);
    const graph::Interval& i = t.at(id, rank);
    if (i.start < 0) continue;
    if (op.kind == graph::OpKind::cpu_wait) {
      // The CPU blocks until the event the wait names has run: the wait op starts then.
      cpu = std::max(cpu, i.start);
      issue[o] = std::min(cpu, i.start);
      continue;
    }
    const std::int64_t kernels = std::max(1, op.work.launches);
    cpu += op.cpu_s + rules.kernel_dispatch * op.kernels_launched();
    // Room for this op's kernels: with launched + kernels issued, the first `done` must be done,
    // so every op holding one of them must have ended.
    const std::int64_t done = launched + kernels - rules.launch_queue;
    while (!pending.empty() && pending.front().first <= done) {
      drained = std::max(drained, pending.front().end);
      pending.pop_front();
    }
    cpu = std::max(cpu, drained);
    issue[o] = std::min(cpu, i.start);
    pending.push_back({launched + 1, i.end});
    launched += kernels;
  }
  return issue;
}

}  // namespace shardsim::report
