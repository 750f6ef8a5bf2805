#include "model/module.hpp"

#include <numeric>

namespace shardsim::model {

std::int64_t Param::numel() const {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

std::int64_t Module::own_numel() const {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

std::int64_t Module::numel() const {
  std::int64_t n = own_numel();
  for (const auto& c : children) n += c.numel();
  return n;
}

}  // namespace shardsim::model
