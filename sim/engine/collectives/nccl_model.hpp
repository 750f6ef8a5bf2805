// NCCL's cost-model constants and the small formulas around them, from src/graph/tuning.cc
// (ncclTopoTuneModel, ncclTopoGetAlgoTime) as of NCCL 2.19-2.28; the ring's figures are those of
// shared/reference/nccl-model.md. Times in seconds, bandwidths in bytes/s.
#pragma once

#include "engine/collective.hpp"
#include "engine/collectives/algorithm.hpp"
#include "engine/collectives/patterns.hpp"

namespace shardsim::engine::collectives::nccl {

// NCCL's algorithm names for its tables (NVLS_TREE is NVLS inside nodes, a tree across them).
enum class Algo { tree, ring, nvls, nvls_tree };

// baseLat: paid once per collective.
[[nodiscard]] double base_latency(Algo a, Protocol p);

// hwLat[NCCL_HW_NVLINK]: one step between GPUs of a node.
[[nodiscard]] double nvlink_step_latency(Algo a, Protocol p);

// The network proxy's per-step overhead NCCL charges every step of a ring that crosses nodes
// (getNetOverhead: 1 us on Intel and other CPUs, 2 us on AMD; x3 for Simple); 0 within a node.
[[nodiscard]] double net_overhead(Protocol p, const GroupShape& shape, const ClusterView& cluster);

// A ring's step between GPUs of a node: hwLat[NCCL_HW_NVLINK], but no less than net_overhead.
[[nodiscard]] double ring_intra_step_latency(Protocol p, const GroupShape& shape, const ClusterView& cluster);

// The network's own latency, which NCCL takes from the net plugin (graph->latencyInter) and adds
// twice for Simple (the send and the flush): here node.nic.latency + fabric.switch_latency.
[[nodiscard]] double network_latency(Protocol p, const ClusterView& cluster);

// One step across nodes: hwLat[NCCL_HW_NET] (the tree's figure when each node holds one rank:
// "with ppn=1 latencies are fully exposed"), plus network_latency.
[[nodiscard]] double net_step_latency(Algo a, Protocol p, const GroupShape& shape, const ClusterView& cluster);

// llMaxBws: the LL protocol's bus-bandwidth ceiling; by GPU generation within a node, by CPU
// vendor and node count (2, more) across nodes.
[[nodiscard]] double ll_max_busbw(const GroupShape& shape, const ClusterView& cluster);

// nvlsEfficiency: the fraction of NVLink bandwidth NVLS achieves (0 before Hopper).
[[nodiscard]] double nvls_efficiency(config::GpuArch arch);

// treeCorrectionFactor: trees run below their model at medium sizes (64 B .. 256 MiB), a
// factor on the tree all-reduce's bandwidth by protocol and power-of-two size.
[[nodiscard]] double tree_correction(Protocol p, double bytes);

// What the ring's protocols achieve (ncclTopoTuneModel): LL moves 8-byte lines of which 4 are
// data (x0.5, capped by ll_max_busbw), LL128 120 of every 128 bytes (x0.92), Simple all.
[[nodiscard]] Efficiency ring_protocol(Protocol p, const GroupShape& shape, const ClusterView& cluster);

// floor(log2(n)) for n >= 1, 0 below (NCCL's log2i on node counts).
[[nodiscard]] int log2i(long long n);

}  // namespace shardsim::engine::collectives::nccl
