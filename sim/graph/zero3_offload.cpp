#include "graph/zero3_offload.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "fsdp/model_state.hpp"
#include "graph/issuer.hpp"

namespace shardsim::graph {

using config::OffloadDevice;

Zero3Offload::Zero3Offload(const config::ScenarioConfig& scenario, const fsdp::Plan& plan, StepGraph& g, Issue issue)
    : cfg_(scenario), z_(scenario.fsdp.zero3), plan_(plan), g_(g), issue_(std::move(issue)) {
  if (z_.offload_optimizer.value != OffloadDevice::nvme) return;
  // DeepSpeed's swapper takes a buffer for each tensor it swaps per sub-group (the fp32 parameter,
  // its gradient, the optimizer's states: offload_config.py, "Adam optimizer has 4 states"), and a
  // second set for the sub-group read ahead or written behind; with fewer its allocation fails.
  const std::int64_t needed = swapped_tensors() * (z_.pipeline_read || z_.pipeline_write ? 2 : 1);
  if (z_.optimizer_buffer_count.value < needed) {
    throw ConfigError(z_.optimizer_buffer_count.where, "fsdp.zero3.optimizer_buffer_count",
                      fmt::format("expected at least {}: {} tensors a sub-group swapped ({}){}; got {}", needed, swapped_tensors(),
                                  config::to_string(cfg_.training.optimizer),
                                  needed > swapped_tensors() ? ", twice over with pipeline_read or pipeline_write" : "",
                                  z_.optimizer_buffer_count.value));
  }
}

std::int64_t Zero3Offload::swapped_tensors() const {
  return 2 + fsdp::optimizer_states(cfg_.training.optimizer);
}

double Zero3Offload::state_bytes_per_param() const {
  return static_cast<double>(plan_.master_bytes) * (1 + fsdp::optimizer_states(cfg_.training.optimizer));
}

int Zero3Offload::bring_partition(int u, const std::string& name, double bytes) {
  if (!params_offloaded()) return -1;
  int read = -1;
  if (z_.offload_param.value == OffloadDevice::nvme) {
    Op r = make_op(OpKind::host_copy, Stream::nvme, "NVMe read " + name, u);
    r.work.nvme_read_bytes = bytes;
    read = issue_(std::move(r));
  }
  Op h2d = make_op(OpKind::host_copy, Stream::h2d, "H2D " + name, u);
  h2d.work.pcie_bytes = bytes;
  h2d.memory.push_back({MemCategory::sharded_params, bytes, false, Pool::all_gather});
  const int id = issue_(std::move(h2d));
  g_.add_edge(read, id, EdgeKind::data);
  return id;
}

int Zero3Offload::optimizer_step(int step, std::int64_t shard, int gradients_in, int reduced) {
  const bool nvme = z_.offload_optimizer.value == OffloadDevice::nvme;
  const std::int64_t groups = std::max<std::int64_t>(1, (shard + z_.sub_group_size - 1) / z_.sub_group_size);
  const auto group_numel = [&](std::int64_t i) { return static_cast<double>(std::min(z_.sub_group_size, shard - i * z_.sub_group_size)); };
  const auto read = [&](std::int64_t i) {
    Op r = make_op(OpKind::host_copy, Stream::nvme, fmt::format("NVMe read optimizer state {}/{}", i + 1, groups), -1);
    r.work.nvme_read_bytes = group_numel(i) * state_bytes_per_param();
    return issue_(std::move(r));
  };
  // DeepSpeed's swappers (swap_tensor/partitioned_optimizer_swapper.py, pipelined_...): without
  // pipelining, a sub-group's state is read, stepped and written back before the next is read;
  // pipeline_read starts the next read before this step, pipeline_write lets the next step start
  // before this write is done.
  int next_read = nvme ? read(0) : -1;
  int last = -1;
  int written = -1;
  for (std::int64_t i = 0; i < groups; ++i) {
    const int this_read = next_read;
    if (nvme && z_.pipeline_read && i + 1 < groups) next_read = read(i + 1);
    Op op = make_op(OpKind::optimizer, Stream::cpu, fmt::format("optimizer step {} ({}/{})", step, i + 1, groups), -1);
    // DeepSpeedCPUAdam's fused step: state read and written, the fp32 gradient read, the 16-bit
    // parameter written (Adam: 2 x 12 + 4 + 2 = 30 bytes per parameter).
    op.work.host_bytes = group_numel(i) * (2 * state_bytes_per_param() + plan_.master_bytes + plan_.param_bytes);
    last = issue_(std::move(op));
    g_.add_edge(gradients_in, last, EdgeKind::data);
    g_.add_edge(reduced, last, EdgeKind::data);
    g_.add_edge(this_read, last, EdgeKind::data);
    if (!z_.pipeline_write) g_.add_edge(written, last, EdgeKind::data);
    if (nvme) {
      Op w = make_op(OpKind::host_copy, Stream::nvme, fmt::format("NVMe write optimizer state {}/{}", i + 1, groups), -1);
      w.work.nvme_write_bytes = group_numel(i) * state_bytes_per_param();
      written = issue_(std::move(w));
      g_.add_edge(last, written, EdgeKind::data);
      if (!z_.pipeline_read && i + 1 < groups) {
        next_read = read(i + 1);  // after this write on the NVMe stream
        g_.add_edge(last, next_read, EdgeKind::data);
      }
    }
  }
  const double partition = static_cast<double>(shard) * plan_.param_bytes;
  int updated = last;
  if (z_.offload_param.value == OffloadDevice::none) {
    Op h2d = make_op(OpKind::host_copy, Stream::h2d, fmt::format("H2D updated parameters {}", step), -1);
    h2d.work.pcie_bytes = partition;
    updated = issue_(std::move(h2d));
  } else if (z_.offload_param.value == OffloadDevice::nvme) {
    Op w = make_op(OpKind::host_copy, Stream::nvme, fmt::format("NVMe write parameters {}", step), -1);
    w.work.nvme_write_bytes = partition;
    updated = issue_(std::move(w));
  }
  g_.add_edge(last, updated, EdgeKind::data);
  return updated;
}

void Zero3Offload::model_state(std::vector<MemEffect>& m, std::int64_t shard) const {
  const auto state = fsdp::model_state_bytes(static_cast<double>(shard), 1, plan_.master_bytes, cfg_.training.optimizer);
  const double partition16 = static_cast<double>(shard) * plan_.param_bytes;
  switch (z_.offload_optimizer.value) {
    case OffloadDevice::none:
      m.push_back({MemCategory::sharded_params, state.params, false, Pool::compute});
      m.push_back({MemCategory::optimizer_state, state.optimizer, false, Pool::compute});
      break;
    case OffloadDevice::cpu:
      m.push_back({MemCategory::sharded_params, state.params, false, Pool::host});
      m.push_back({MemCategory::optimizer_state, state.optimizer, false, Pool::host});
      m.push_back({MemCategory::grad_shards, static_cast<double>(shard) * plan_.master_bytes, false, Pool::host});
      break;
    case OffloadDevice::nvme:
      // On NVMe; in pinned CPU memory the fp32 gradients and the swapper's buffers: buffer_count of
      // the largest sub-group's fp32 elements (optimizer_utils.py SwapBufferManager).
      m.push_back({MemCategory::grad_shards, static_cast<double>(shard) * plan_.master_bytes, false, Pool::host});
      m.push_back({MemCategory::optimizer_state,
                   static_cast<double>(z_.optimizer_buffer_count.value) *
                       static_cast<double>(std::min<std::int64_t>(shard, z_.sub_group_size)) * plan_.master_bytes,
                   false, Pool::host});
      break;
  }
  switch (z_.offload_param.value) {
    case OffloadDevice::none:
      m.push_back({MemCategory::sharded_params, partition16, false, Pool::compute});
      break;
    case OffloadDevice::cpu:
      m.push_back({MemCategory::sharded_params, partition16, false, Pool::host});
      break;
    case OffloadDevice::nvme:
      // DeepSpeed's pinned parameter buffers: buffer_count x buffer_size elements.
      m.push_back({MemCategory::sharded_params,
                   static_cast<double>(z_.param_buffer_count) * static_cast<double>(z_.param_buffer_size) * plan_.param_bytes, false,
                   Pool::host});
      break;
  }
}

double Zero3Offload::nvme_bytes(std::int64_t shard) const {
  double b = 0;
  if (z_.offload_optimizer.value == OffloadDevice::nvme) b += static_cast<double>(shard) * state_bytes_per_param();
  if (z_.offload_param.value == OffloadDevice::nvme) b += static_cast<double>(shard) * plan_.param_bytes;
  return b;
}

void Zero3Offload::checkpoint_saved(int forward, int segment, double bytes) {
  if (kept_.segment >= 0) {
    // The previous checkpoint to pinned CPU memory on the side stream, once this forward has run
    // (the stream waits for the compute stream); its GPU block returns when the copy is done.
    const std::string& name = plan_.segments[static_cast<std::size_t>(kept_.segment)].name;
    Op d2h = make_op(OpKind::host_copy, Stream::d2h, "D2H checkpoint " + name, -1);
    d2h.work.pcie_bytes = kept_.bytes;
    d2h.memory.push_back({MemCategory::activations, kept_.bytes, false, Pool::host});
    d2h.memory.push_back({MemCategory::activations, -kept_.bytes, true, Pool::compute});
    const int id = issue_(std::move(d2h));
    g_.add_edge(forward, id, EdgeKind::data);
    offloaded_[kept_.segment] = {id, kept_.bytes};
  }
  kept_ = {segment, bytes};
}

int Zero3Offload::checkpoint_restore(int segment, const std::string& name) {
  if (segment == kept_.segment) {
    kept_ = {};
    return -1;
  }
  const auto it = offloaded_.find(segment);
  if (it == offloaded_.end()) return -1;
  const auto [copied_out, bytes] = it->second;
  offloaded_.erase(it);
  Op h2d = make_op(OpKind::host_copy, Stream::h2d, "H2D checkpoint " + name, -1);
  h2d.work.pcie_bytes = bytes;
  h2d.memory.push_back({MemCategory::activations, bytes, false, Pool::compute});
  h2d.memory.push_back({MemCategory::activations, -bytes, true, Pool::host});
  const int id = issue_(std::move(h2d));
  g_.add_edge(copied_out, id, EdgeKind::data);
  return id;
}

}  // namespace shardsim::graph
