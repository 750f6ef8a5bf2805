#include "graph/timeline.hpp"

#include <algorithm>

namespace shardsim::graph {

double Timeline::makespan() const {
  double end = 0;
  for (const auto& i : intervals_) end = std::max(end, i.end);
  return end;
}

}  // namespace shardsim::graph
