#include "graph/cpu_memory_view.hpp"

#include <map>

namespace shardsim::graph {

void CpuMemoryView::issued(const Op& op) {
  for (const MemEffect& e : op.memory) {
    if (e.pool == Pool::host) continue;
    if (e.bytes < 0 && (e.pool == Pool::all_gather || op.stream != Stream::compute)) {
      pending_.push_back({op.id, op.stream, -e.bytes});
    } else {
      live_ += e.bytes;
    }
  }
}

void CpuMemoryView::free_after(const Op& op, double bytes) {
  pending_.push_back({op.id, op.stream, bytes});
}

std::vector<int> CpuMemoryView::make_room(double bytes) {
  if (live_ + bytes <= capacity_ || pending_.empty()) return {};
  std::map<Stream, int> last;  // op ids grow in issue order, which is each stream's order
  for (const PendingFree& p : pending_) {
    live_ -= p.bytes;
    int& id = last.try_emplace(p.stream, p.op).first->second;
    if (p.op > id) id = p.op;
  }
  pending_.clear();
  std::vector<int> wait;
  for (const auto& [stream, id] : last) wait.push_back(id);
  return wait;
}

}  // namespace shardsim::graph
