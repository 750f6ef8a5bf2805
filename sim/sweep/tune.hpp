// shardsim tune: a three-stage search for the settings with the highest tokens/s per GPU whose
// peak memory fits.
//
// Stage 1, the shape of the step (what sets its work and activations), as a full grid at the
// scenario's sharding and wrap:
//   training.activation_checkpointing   none, selective, full
//   training.micro_batch / grad_accum   each divisor m of the batch per GPU per step B, with
//                                       grad_accum = B / m (the batch an optimizer step sees is
//                                       a training choice, so it is kept)
// plus the scenario as written, to compare against. With tensor-, pipeline- or context-parallel
// degrees or pipeline schedules to search (`shardsim tune --tp / --pp / --cp / --pp-schedule`),
// the batch axis becomes a layout axis: for each degree t (p, c), each divisor m of the sequences
// per data-parallel rank there (the global batch kept: the scenario's per-rank batch x t p c / its
// own), parallelism.tp / pp [/ cp] / training.micro_batch / grad_accum [/ parallelism.pp_schedule]
// together. (The command adds training.float8.recipe and training.compile here when asked.)
// Stage 2, for the best configurations of stage 1 (stage2_shapes), how FSDP shards them:
//   fsdp.sharding                       full_shard, shard_grad_op, no_shard, shard_optimizer; on more than one
//                                       node also hybrid_shard, hybrid_shard_zero2
//   fsdp.wrap                           module per 1, 2 or 4 blocks; size (min_params 1e8); FSDP2
//                                       also one block a unit with outer_modules: units
// Searching stage 1's shapes at one sharding and wrap, then sharding and wrap on the best, costs
// (shapes + best x 30) simulations instead of shapes x 30: a layout search at scale has hundreds
// of shapes, its pipelined ones seconds each. `exhaustive` searches the product in stage 1 instead
// and skips stage 2.
// Stage 3, for the best `finalists` of stages 1 and 2 that fit, the prefetch settings of each version:
//   FSDP1: fsdp.backward_prefetch x fsdp.limit_all_gathers          pre, post, none x true, false
//   FSDP2: fsdp.backward_prefetch_depth x fsdp.forward_prefetch     1, 2 x false, true
// FSDP2 has no rate limiter and always prefetches before a unit's backward (shared/reference/
// fsdp-semantics.md section 7); its knobs are the lengths of its explicit prefetch lists.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "sweep/grid.hpp"
#include "sweep/result.hpp"

namespace shardsim::sweep {

struct TuneSpace {
  std::vector<Axis> shape;     // stage 1: checkpointing, batch or layout
  std::vector<Axis> fsdp;      // stage 2: sharding x wrap, on the best shapes
  std::vector<Axis> prefetch;  // stage 3: prefetching, refined on the finalists
  std::int64_t batch = 1;      // sequences per GPU per optimizer step, kept fixed
  // A point whose FSDP units would hold more blocks than its pipeline stages have is left
  // out (the loader refuses it): the model's blocks (0: not known), and the scenario's pp and
  // model chunks per pipeline rank where a point does not set them.
  std::int64_t blocks = 0;
  int pp = 1;
  int stages_per_rank = 1;
  std::size_t too_deep = 0;  // pipelined layouts left out: more model stages than the model's blocks

  // Stage 1's axes: the shape's, and with `exhaustive` sharding and wrap too.
  [[nodiscard]] std::vector<Axis> stage1_axes(bool exhaustive) const {
    std::vector<Axis> axes = shape;
    if (exhaustive) axes.insert(axes.end(), fsdp.begin(), fsdp.end());
    return axes;
  }
};

// The mesh layouts to search (each empty: the scenario's own).
struct Layouts {
  std::vector<int> tp{};                    // tensor-parallel degrees
  std::vector<int> pp{};                    // pipeline-parallel degrees
  std::vector<int> cp{};                    // context-parallel degrees
  std::vector<std::string> pp_schedules{};  // pipeline schedules, for the layouts with pp > 1
  bool tp_async = false;                    // also try async TP (on and off) on the layouts with tp > 1
  std::int64_t blocks = 0;  // the model's blocks, to leave out pipelines of more stages and wrap units larger than a stage (0: keep all)
};

// `batch`: sequences per data-parallel rank per step at the scenario's tp, pp and cp; default its
// micro_batch x grad_accum. The global batch stays: a rank's batch scales with tp x pp x cp. A
// pipelined layout runs its batch as one optimizer micro-step of one-sequence micro-batches, once
// per schedule searched.
[[nodiscard]] TuneSpace tune_space(const config::ScenarioConfig& base, std::optional<std::int64_t> batch, const Layouts& layouts = {});

// Stage 1's points: the shape axes' grid (with `exhaustive`, the grid of the shape and FSDP axes),
// then the scenario as written (no assignments) last, so that a grid point that equals it ranks
// first. Points whose wrap units hold more blocks than a pipeline stage has are left out;
// `left_out`, if given, counts them.
[[nodiscard]] std::vector<Point> stage1_points(const TuneSpace& space, bool exhaustive, std::size_t* left_out = nullptr);

// What a point holds at its allocated peak that no sharding or wrap changes: activations, the
// loss's logits, pipeline buffers and GEMM workspaces (its summary's memory_breakdown; 0 without).
[[nodiscard]] double unshardable_bytes(const PointResult& r);

// The stage-1 configurations whose sharding and wrap stage 2 searches: the best `n` that fit (as
// finalists() picks them), then, of those that do not fit but are faster than the best that does,
// the `n` with the least peak memory (a sharding or wrap that holds less may make them fit; when
// nothing fits, the `n` least peaks), leaving out those whose unshardable bytes alone exceed the
// limit (or, without one, what their GPU leaves to the allocator); `beyond`, if given, counts them.
[[nodiscard]] std::vector<PointResult> stage2_shapes(const std::vector<PointResult>& results, std::optional<double> limit, std::size_t n,
                                                     std::size_t* beyond = nullptr);

// Stage 2's points: each shape's assignments followed by each sharding x wrap, leaving out the
// wraps larger than the shape's pipeline stages (`left_out`, if given, counts them).
[[nodiscard]] std::vector<Point> stage2_points(const TuneSpace& space, const std::vector<PointResult>& shapes,
                                               std::size_t* left_out = nullptr);

// The stage-3 keys that do not apply to a finalist (its sharding keeps every unit's parameters,
// say, so that backward prefetching is moot): the caller loads the scenario with them to know.
using MootKeys = std::function<std::vector<std::string>(const PointResult& finalist)>;

// Stage 3's points: each finalist's assignments followed by each combination of the prefetch
// axes, leaving out the axes whose keys are all moot for it (`moot`, if given): a finalist none of
// whose axes apply gets no stage-3 point, since each would repeat it.
[[nodiscard]] std::vector<Point> stage3_points(const TuneSpace& space, const std::vector<PointResult>& finalists,
                                               const MootKeys& moot = {});

// A point fits when it simulated and its peak memory is within `limit` (bytes), or, without a
// limit, within its GPU's memory.
[[nodiscard]] bool fits(const PointResult& r, std::optional<double> limit);

// Indices of the fitting points by decreasing tokens/s per GPU (ties: less peak memory, then
// position), leaving out a point whose figures equal those of one kept whose assignments begin
// its own (a later stage's setting that changed nothing); at most `n`.
[[nodiscard]] std::vector<std::size_t> ranked(const std::vector<PointResult>& results, std::optional<double> limit, std::size_t n);

// Stage 3's starting points: the best `n` of ranked(), skipping any whose figures (tokens/s and
// peak memory) equal a better one's, which is the same schedule reached by other settings.
[[nodiscard]] std::vector<PointResult> finalists(const std::vector<PointResult>& results, std::optional<double> limit, std::size_t n);

// The assignments as a YAML block to paste into a scenario, after `comment` lines ("# ...").
//   training.micro_batch=2, fsdp.wrap={policy: none}  ->  training:\n  micro_batch: 2\nfsdp:\n  wrap: {policy: none}\n
[[nodiscard]] std::string yaml_snippet(const std::vector<std::string>& assignments, const std::vector<std::string>& comment);

}  // namespace shardsim::sweep
