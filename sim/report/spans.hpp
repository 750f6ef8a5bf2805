// Stretches of time as (start, end) pairs, in seconds, and their union.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace shardsim::report {

using Span = std::pair<double, double>;

// Sorted, disjoint spans covering the same time as `v` (empty spans dropped).
inline std::vector<Span> merged(std::vector<Span> v) {
  std::sort(v.begin(), v.end());
  std::vector<Span> out;
  for (const auto& s : v) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace shardsim::report
