// RCCL's tuner, which picks the algorithm and protocol of every collective on AMD GPUs
// (ClusterView::uses_rccl: gpu.arch cdna3), from ROCm/rccl src/graph/tuning.cc and
// rome_models.cc at 0cbce2a (2024-10-24). RCCL keeps NCCL's tuner but swaps its constants for
// tables tuned per machine ("tuning models"); the MI300X platform (8 GPUs on a full xGMI mesh,
// rome_model_79 without NICs, rome_model_81 with one per GPU) names tuning_model_5:
//   base latency (us)       ring and tree 12 / 12 / 17 (LL / LL128 / Simple)
//   xGMI step (us)          ring 0.8 / - / 2.1          tree 0.9 / - / 2.3
//   network step (us)       ring 9.5 / - / 320          tree 10.5 / - / 25
//   bandwidth ratio         ring 0.08 / 0 / 1.0         tree 0.06 / 0 / 0.11 (two nodes or
//                                                       fewer), 0.59 (more)
//   size corrections        the tree's at every size, the ring's across nodes: 27 factors by
//                           log2(S / 64), from 0.1 to 1.0 (a multi-node ring with Simple at 0.1
//                           below 512 MiB, which steers all-reduces to the tree)
// and it runs no LL128 on MI300 (enabled only for gfx90a builds with it), nor the tree with
// Simple within one node of gfx94x.
//
// Those factors are the tuner's weights, not timings: a ring all-gather across nodes, which has
// no other algorithm, would otherwise run at a tenth of its links and pay 320 us a step. So RCCL's
// model decides which pair runs, and the pair is then timed as any other (nccl_model.hpp: NCCL's
// constants of the node's generation, the links' rates), as collectives.hpp describes.
#pragma once

#include <optional>
#include <string_view>

#include "engine/collectives/nccl_model.hpp"

namespace shardsim::engine::collectives::rccl {

// The NCCL algorithm RCCL's tables describe under a registered algorithm's name (ring, tree);
// none for those RCCL lacks (NVLS) or shardsim adds (hierarchical).
[[nodiscard]] std::optional<nccl::Algo> algo_of(std::string_view algorithm);

// Whether RCCL's tuner weighs this pair: never the tree with Simple within one node; LL128 only
// when the protocol is forced (NCCL_PROTO).
[[nodiscard]] bool enabled(nccl::Algo a, Protocol p, const GroupShape& shape, bool protocol_forced);

// RCCL's latency estimate: base + steps x the step latencies (the ring's 2 x nodes network steps
// for an all-reduce across nodes, as RCCL counts them; NCCL now counts 2 x (nodes - 1)).
[[nodiscard]] double latency(nccl::Algo a, graph::OpKind kind, Protocol p, const GroupShape& shape, const ClusterView& cluster);

// The fraction of the links' rate RCCL's tuner credits: bandwidth ratio x size correction.
[[nodiscard]] double bandwidth_factor(nccl::Algo a, Protocol p, const GroupShape& shape, double bytes);

// RCCL's estimate of the pair, the one it picks by: latency + `full_rate` / bandwidth_factor,
// where `full_rate` is the transfer time of the algorithm's traffic at the links' rates.
[[nodiscard]] double estimate(nccl::Algo a, graph::OpKind kind, Protocol p, const GroupShape& shape, const ClusterView& cluster,
                              double bytes, double full_rate);

}  // namespace shardsim::engine::collectives::rccl
