#include "report/blas_workspace.hpp"

namespace shardsim::report {

std::vector<graph::MemEffect> blas_workspaces(const config::GpuSpec& gpu) {
  const double bytes = gpu.blas_workspace.value();
  if (bytes <= 0) return {};
  return std::vector<graph::MemEffect>(kGemmThreads, {graph::MemCategory::workspaces, bytes, false, graph::Pool::compute});
}

}  // namespace shardsim::report
