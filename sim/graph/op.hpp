// The operations of one training step and the edges between them: pure data, no SimGrid.
// This is what `shardsim export` writes and what the replay harness executes on GPUs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::graph {

enum class OpKind {
  all_gather,      // collective: unshard a unit's parameters
  reduce_scatter,  // collective: reduce and shard a unit's gradients
  all_reduce,      // collective: no_shard gradients, or hybrid sharding's inter-node reduction
  forward,         // compute: a segment's forward
  backward,        // compute: a segment's backward (with any activation recompute)
  copy,            // compute-stream copies: FSDP2's copy-out and copy-in, a pipeline's merged outputs, buffer zeroing
  optimizer,       // compute: the optimizer step on the local shard (on the CPU with offload)
  cpu_wait,        // the CPU thread blocks on an event (FSDP1 rate limiter); takes no time itself
  host_copy,       // CPU offload: a copy over PCIe (host to device or back)
  send,            // point-to-point: pipeline stages' activations and gradients (Group::pp), async TP's chunk copies (Group::tp)
};
inline constexpr int kOpKinds = 10;

// Each rank runs one CUDA stream per role; ops on one stream run in issue order.
enum class Stream {
  compute,
  nccl,            // FSDP1: the process group's one NCCL stream, shared by AG and RS
  all_gather,      // FSDP2
  reduce_scatter,  // FSDP2
  all_reduce,      // hybrid sharding's replicate group (its own process group)
  cpu,             // the CPU thread
  h2d,             // CPU offload: host-to-device copies (FSDP1's pre-unshard stream)
  d2h,             // CPU offload: device-to-host copies of gradients
  tp,              // tensor parallelism's process group (activations inside blocks)
  nvme,            // ZeRO-Infinity: reads and writes of the node's NVMe drives (DeepSpeed's aio threads)
  pp,              // pipeline parallelism's process group: sends and receives between stages
  cp,              // context parallelism's process group: K and V gathered for attention
};
inline constexpr int kStreams = 12;

// The ranks a collective spans, relative to one rank.
enum class Group {
  none,       // not a collective
  shard,      // the ranks a parameter is sharded over (world, or a node for hybrid sharding)
  replicate,  // ranks holding the same shard (hybrid: same local rank on every node)
  world,      // every rank
  reshard,    // FSDP2 reshard_after_forward = d: d members of a shard group holding a 1/d copy
  tp,         // tensor parallelism: the ranks splitting one block's matmuls (consecutive ranks)
  pp,         // pipeline parallelism: a rank of one stage and its peer in another (a send/recv pair)
  cp,         // context parallelism: the ranks splitting one sequence (stride tp)
};
inline constexpr int kGroups = 8;

enum class EdgeKind {
  data,        // the consumer reads what the producer wrote
  stream,      // same stream, issue order
  prefetch,    // a prefetch is issued only once its trigger is reached
  rate_limit,  // FSDP1 limiter / FSDP2 buffer reuse: wait for an earlier op to free memory
  cpu,         // issued by the CPU after it returned from a blocking wait
};

enum class MemCategory {
  sharded_params,    // fp32 (or storage dtype) parameter shards
  unsharded_params,  // all-gathered parameters in flight (and all-gather buffers)
  gradients,         // unsharded gradients as backward produces them
  reduce_buffers,    // reduce-scatter / all-reduce inputs in the reduce dtype
  grad_shards,       // reduced, sharded gradients awaiting the optimizer
  optimizer_state,   // optimizer moments
  activations,       // activations saved for backward, recompute and backward temporaries
  loss,              // logits and loss buffers (fp32 log-softmax and its gradients)
  workspaces,        // the GEMM library's workspaces (report/blas_workspace.hpp)
  pipeline_buffers,  // a pipeline stage's receive buffers, one per micro-batch (pipeline_builder.cpp)
};
inline constexpr int kMemCategories = 10;

// The caching-allocator pool a tensor is allocated from: PyTorch keeps freed blocks per CUDA
// stream and does not hand them to another stream, so each stream's pool holds on to its own
// high-water mark (shared/reference/d1-hand-model.md). `host` is CPU memory (CPU offload).
enum class Pool { compute, all_gather, reduce_scatter, all_reduce, host };
inline constexpr int kPools = 5;

// What a GEMM's inputs are: the compute dtype, or float8 with tensorwise, rowwise or MXFP8
// block scales (training.float8; the compute model prices each at its own rate).
enum class GemmType : std::uint8_t { high, fp8, fp8_rowwise, mxfp8 };
inline constexpr int kGemmTypes = 4;
[[nodiscard]] std::string_view gemm_type_name(GemmType t);  // "high", "fp8", "fp8_rowwise", "mxfp8"
[[nodiscard]] std::optional<GemmType> gemm_type_from_name(std::string_view name);

// A matmul of the op: y[m, n] = x[m, k] W^T (forward), or one of its two backward products.
struct Gemm {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  GemmType type = GemmType::high;
  // Float8: partial sums promoted to fp32 as the kernel goes (use_fast_accum=False, torchao's
  // grad_input and grad_weight GEMMs), rather than accumulated in the tensor cores' precision.
  bool precise_accum = false;
  [[nodiscard]] double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

// The block whose GEMMs a topology's gpu.efficiency.matmul describes on average
// (engine::RooflineModel): Llama 3 8B's seven linears at 16,384 tokens, each as its forward,
// grad_input and grad_weight GEMM (`gradient` the last two).
struct ReferenceGemm {
  Gemm gemm;
  bool gradient = false;
};
[[nodiscard]] std::vector<ReferenceGemm> reference_block();
// The FLOP-weighted harmonic mean of `value` over the reference block's GEMMs: their FLOPs over
// the sum of each one's FLOPs / value (the reduction length K_ref the GEMM rate is quoted at, the
// tiles' fill of engine/gemm_tiles.hpp).
template <class F>
[[nodiscard]] double reference_block_mean(F&& value) {
  double flops = 0;
  double weighted = 0;
  for (const auto& r : reference_block()) {
    flops += r.gemm.flops();
    weighted += r.gemm.flops() / value(r.gemm);
  }
  return flops / weighted;
}

// A fused attention call (FlashAttention-style).
struct AttentionCall {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  bool causal = true;
  bool backward = false;
  int cp = 1;                           // context parallelism: this rank's 1/cp of the queries (load-balanced) against every key
  int steps = 1;                        // ring attention: the op runs one of `steps` equal steps of the call (K/V of one rank each)
  std::int64_t window = 0;              // causal sliding window: a query sees itself and window - 1 keys before it; 0: none
  [[nodiscard]] double flops() const;   // 4 b s h d x keys_per_query / cp; backward 2.5x (recomputes S, P)
  [[nodiscard]] bool windowed() const;  // a window shorter than the sequence, on causal attention without a ring
  // Keys a query visits on average in one kernel: a step's keys (s / steps), half of them causal;
  // with a window w < s, w - w^2 / 2s (the queries before the w-th see fewer).
  [[nodiscard]] double keys_per_query() const;
};

// What a compute op does, in the terms the compute model prices and the replay harness runs.
struct Work {
  std::vector<Gemm> gemms;
  std::vector<AttentionCall> attention;
  double memory_bytes = 0;       // HBM traffic of bandwidth-bound kernels
  double column_cast_bytes = 0;  // ... of those that scale and cast along a tensor's columns (rowwise float8)
  int launches = 0;              // kernels launched
  double pcie_bytes = 0;         // host_copy: bytes over PCIe
  double host_bytes = 0;         // CPU work (offloaded optimizer): CPU memory traffic
  double nvme_read_bytes = 0;    // ZeRO-Infinity: bytes read from the node's NVMe drives
  double nvme_write_bytes = 0;   // ... and written to them

  [[nodiscard]] double gemm_flops() const;
  [[nodiscard]] double attention_flops(bool backward) const;
  Work& operator+=(const Work& o);
};

// Seconds of a compute op by kind of work, as the compute model prices it (engine/compute_model.hpp),
// the op alone on its GPU.
struct ComputeSplit {
  double gemm = 0;
  double attention = 0;
  double memory = 0;  // bandwidth-bound kernels
  double launch = 0;  // per-kernel launch cost
  double other = 0;   // PCIe copies, host (CPU) work, NVMe reads and writes
  [[nodiscard]] double total() const { return gemm + attention + memory + launch + other; }
  ComputeSplit& operator+=(const ComputeSplit& o);
};

inline constexpr int kOpTensors = 64;  // MemEffect::tensor's numbers per op

struct MemEffect {
  MemCategory category = MemCategory::activations;
  double bytes = 0;     // > 0 allocates, < 0 frees
  bool at_end = false;  // at the op's end (else at its start)
  Pool pool = Pool::compute;
  // An allocation made when the CPU issues the op rather than when the GPU starts it: a block
  // that is later freed with record_stream, so that how far the CPU runs ahead decides how many
  // such blocks are live at once (report/cpu_issue.hpp).
  bool at_issue = false;
  // An allocation the CPU makes in program order where the GPU runs the op ahead of that point
  // (FSDP2's all-gather outputs, allocated when their hook runs): accounted no earlier than the
  // GPU start of `not_before`, the next compute-stream op the CPU issued after it (-1: none).
  int not_before = -1;
  // Made in the run's first step only: the optimizer state torch.optim creates lazily at the first
  // step() (report/metrics.cpp replays a one-step run's memory twice so that later steps find it).
  bool first_step_only = false;
  // Numbers a tensor the op allocates and frees itself (0 to kOpTensors - 1), so that the free
  // releases that block where live tensors of its size lie elsewhere (the loss's transients beside
  // other micro-batches' kept tensors); -1: any block of its size.
  int tensor = -1;
};

struct Op {
  int id = 0;
  OpKind kind = OpKind::forward;
  Stream stream = Stream::compute;
  std::string name;  // "AG layers.3", "FWD layers.3", ...
  int unit = -1;     // FSDP unit, -1 if none
  int step = 0;      // training step (0-based)
  int micro = 0;     // micro-step within the step
  Work work;         // compute ops
  Group group = Group::none;
  double bytes = 0;  // collectives: total buffer size S (all-gather output, reduce-scatter input)
  std::vector<MemEffect> memory;
  // Pipeline parallelism: the stage whose ranks run the op (-1: every rank), and for a send the
  // stage that receives it (the op joins a rank of `stage` and its peer in `peer_stage`).
  int stage = -1;
  int peer_stage = -1;
  // A send over a group of more than two ranks (async tensor parallelism's pipelined copies, over
  // Group::tp): every member sends `bytes` to the member `shift` places after it, 1 <= shift < n.
  int shift = 0;
  // CPU seconds the framework spends on the op before launching its kernels, besides
  // host.kernel_dispatch per kernel: FSDP's hooks (host.fsdp1_hook_per_tensor / fsdp2_...).
  double cpu_s = 0;

  [[nodiscard]] bool is_collective() const { return group != Group::none; }
  [[nodiscard]] bool runs_on_stage(int s) const { return stage < 0 || stage == s || peer_stage == s; }
  // Kernels (and copies) the CPU launches for the op: none for a CPU wait or the CPU's own work,
  // one for a collective or a copy, else the compute model's count (at least one).
  [[nodiscard]] int kernels_launched() const {
    if (kind == OpKind::cpu_wait || stream == Stream::cpu) return 0;
    return std::max(1, work.launches);
  }
};

[[nodiscard]] std::string_view to_string(OpKind k);
// A collective kind's place in tables kept per collective (calibrations, forced algorithms):
// all_gather 0, reduce_scatter 1, all_reduce 2; -1 for any other kind.
[[nodiscard]] int collective_index(OpKind k);
[[nodiscard]] std::string_view to_string(Stream s);
[[nodiscard]] std::string_view to_string(Group g);
[[nodiscard]] std::string_view to_string(EdgeKind e);
[[nodiscard]] std::string_view to_string(MemCategory c);
[[nodiscard]] std::string_view to_string(Pool p);

}  // namespace shardsim::graph
