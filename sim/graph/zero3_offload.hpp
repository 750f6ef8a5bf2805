// ZeRO-Offload and ZeRO-Infinity in a ZeRO-3 step: the traffic between the GPU, CPU memory and the
// node's NVMe drives that fsdp.zero3's offload settings add (deepspeed/runtime/zero/stage3.py,
// swap_tensor/, runtime/activation_checkpointing/checkpointing.py), and where the model state
// lives. The ZeRO-3 builder owns the step's order; its issue function, through which these ops go,
// keeps its CPU view of device memory (graph/cpu_memory_view.hpp) complete.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/scenario.hpp"
#include "fsdp/plan.hpp"
#include "graph/step_graph.hpp"

namespace shardsim::graph {

class Zero3Offload {
 public:
  using Issue = std::function<int(Op)>;
  Zero3Offload(const config::ScenarioConfig& scenario, const fsdp::Plan& plan, StepGraph& g, Issue issue);

  // The 16-bit partitions live off the GPU and pass through it before each all-gather.
  [[nodiscard]] bool params_offloaded() const { return z_.offload_param.value != config::OffloadDevice::none; }
  [[nodiscard]] bool optimizer_offloaded() const { return z_.offload_optimizer.value != config::OffloadDevice::none; }

  // With parameters offloaded: `bytes` of unit u's partition from NVMe into a pinned buffer, then
  // to the GPU. Returns the copy the all-gather waits for, or -1.
  int bring_partition(int u, const std::string& name, double bytes);

  // The optimizer step on the CPU (DeepSpeedCPUAdam over the fp32 state, the gradients read, the
  // 16-bit partition written), one sub-group at a time; from NVMe, each sub-group's state read
  // before and written after its step (the next read overlapping the step with pipeline_read, the
  // write overlapping the next step with pipeline_write); then the updated
  // partition back to the GPU, or to NVMe when parameters live there. `gradients_in`: the last
  // gradient copy to the CPU; `reduced`: the last reduction. Returns the op the next step follows.
  int optimizer_step(int step, std::int64_t shard, int gradients_in, int reduced);

  // Where the model state of a rank's `shard` parameters lives before the step (GPU or CPU
  // memory), appended to `m`, and what it keeps on its node's drives.
  void model_state(std::vector<MemEffect>& m, std::int64_t shard) const;
  [[nodiscard]] double nvme_bytes(std::int64_t shard) const;

  // Activation checkpoints in CPU memory (fsdp.zero3.cpu_checkpointing, DeepSpeed's
  // activation_checkpointing.cpu_checkpointing): each checkpointed block's input, once the next
  // block has registered its own, is copied to pinned CPU memory on a side stream after that
  // block's forward and its GPU copy freed; the newest stays on the GPU (keep_last_count 1). In
  // backward an offloaded input is copied back when its block's backward asks for it.
  [[nodiscard]] bool offloads_checkpoints() const { return z_.cpu_checkpointing.value; }
  // `forward` saved `bytes` of a checkpointed block's input (segment `segment`).
  void checkpoint_saved(int forward, int segment, double bytes);
  // Before the backward of `segment`: the copy back it waits for, or -1 (kept on the GPU).
  int checkpoint_restore(int segment, const std::string& name);

 private:
  // fp32 master weights and optimizer state per parameter (Adam: 4 + 8), as the offloaded step
  // reads and writes them.
  [[nodiscard]] double state_bytes_per_param() const;
  // Tensors DeepSpeed's swapper moves per sub-group: fp32 parameter, gradient, optimizer states.
  [[nodiscard]] std::int64_t swapped_tensors() const;

  const config::ScenarioConfig& cfg_;
  const config::Zero3Config& z_;
  const fsdp::Plan& plan_;
  StepGraph& g_;
  Issue issue_;
  struct Checkpoint {
    int segment = -1;
    double bytes = 0;
  };
  Checkpoint kept_;  // the newest checkpoint, still on the GPU
  struct Offloaded {
    int copy = -1;  // the copy to the host
    double bytes = 0;
  };
  std::unordered_map<int, Offloaded> offloaded_;  // segment -> its input in CPU memory
};

}  // namespace shardsim::graph
