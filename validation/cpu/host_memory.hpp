// Whether a CPU replay fits the host: every rank of the CPU backend runs on this machine, each
// with its streams' GEMM and copy buffers and its communicators' send and receive buffers. A
// replay that does not fit would be killed by the kernel after minutes of work (the default
// scenario at full scale needs far more than a workstation has), so it is refused before it
// starts, with the scale flags that would fit.
#pragma once

#include <string>

#include "cpu/cpu_backend.hpp"
#include "graph/step_graph.hpp"

namespace shardsim::replay {

// Bytes of host memory one rank of a CPU replay of `g` allocates at `scale`.
[[nodiscard]] double cpu_replay_bytes_per_rank(const graph::StepGraph& g, CpuScale scale);

// The host's available memory (MemAvailable in /proc/meminfo), or a negative number if unknown.
[[nodiscard]] double available_host_memory();

// Throws UsageError when `ranks` ranks at `scale` need more than `fraction` of `available`
// bytes, naming the --compute-scale / --bytes-scale that would fit. Nothing when `available` < 0.
void check_cpu_replay_fits(const graph::StepGraph& g, CpuScale scale, int ranks, double available, const std::string& graph_file,
                           double fraction = 0.8);

}  // namespace shardsim::replay
