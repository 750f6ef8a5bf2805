// A cluster description (topologies/*.yaml) as plain data. See DESIGN.md "Topology file".
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "config/choice.hpp"
#include "config/file_source.hpp"
#include "core/config_node.hpp"
#include "core/param_spec.hpp"
#include "core/units.hpp"

namespace shardsim::config {

// The achievable fractions of peak that the compute model uses (engine/compute_model.hpp).
// They are properties of a GPU type, measured or taken from published kernel benchmarks;
// a topology file says where its figures come from.
struct GpuEfficiency {
  double matmul = 0.6;               // large bf16 GEMMs, fraction of peak_flops
  double attention_forward = 0.35;   // FlashAttention-2 forward, fraction of peak_flops
  double attention_backward = 0.28;  // FlashAttention-2 backward
  // Hopper's faster fused attention kernels (training.attention: cudnn, flash3), fractions of
  // peak_flops; unset (< 0): not known for this GPU, and the kernel is refused.
  double attention_cudnn_forward = -1;
  double attention_cudnn_backward = -1;
  double attention_flash3_forward = -1;
  double attention_flash3_backward = -1;
  double memory = 0.8;  // memory-bound kernels, fraction of hbm_bandwidth
  // Kernels that scale and cast a tensor along its columns (the column-wise casts of rowwise
  // float8), fraction of hbm_bandwidth: Inductor's reads of them are uncoalesced. 0.19: 0.6-0.7
  // TB/s on an H100 (3.35 TB/s) where the same cast along rows reaches 2.0-2.2 (pytorch/pytorch#149982,
  // 2025-03, torch 2.8.0a0); other GPUs assumed to reach the same fraction of theirs.
  double memory_column_cast = 0.19;
  // Float8 GEMMs (training.float8), fractions of peak_fp8 / peak_mxfp8. Unset (< 0) they take
  // `matmul`: the same achievable fraction as bf16, as torchao's float8 roofline assumes
  // (torchao/testing/float8/roofline_utils.py, pct_achievable_gemm_tops).
  double matmul_fp8 = -1;          // tensorwise scales (cuBLAS)
  double matmul_fp8_rowwise = -1;  // rowwise scales (CUTLASS kernels in PyTorch); unset: matmul_fp8
  double matmul_mxfp8 = -1;        // MXFP8 block scales (Blackwell); unset: matmul_fp8
  // Float8 GEMMs that promote their partial sums to fp32 as they go (use_fast_accum=False:
  // torchao's grad_input and grad_weight GEMMs, of the tensorwise and rowwise recipes alike, both
  // on cuBLAS's tensorwise kernel); unset: matmul_fp8.
  double matmul_fp8_precise = -1;
  [[nodiscard]] double fp8() const { return matmul_fp8 >= 0 ? matmul_fp8 : matmul; }
  [[nodiscard]] double fp8_precise() const { return matmul_fp8_precise >= 0 ? matmul_fp8_precise : fp8(); }
  [[nodiscard]] double fp8_rowwise() const { return matmul_fp8_rowwise >= 0 ? matmul_fp8_rowwise : fp8(); }
  [[nodiscard]] double mxfp8() const { return matmul_mxfp8 >= 0 ? matmul_mxfp8 : fp8(); }
};

// How attention runs: one fused kernel (FlashAttention-2; SDPA's pick on these GPUs), the
// scores materialized between two batched GEMMs (SDPA's math backend, Megatron-LM before flash),
// or one fused kernel of Hopper's faster generation: cuDNN's (SDPA's cuDNN backend, Transformer
// Engine's FusedAttention) or FlashAttention-3, priced at the topology's rates for them.
enum class AttentionKernel { flash, unfused, cudnn, flash3 };

// The GPU's fractions of peak, forward and backward, for the kernel training.attention names
// (unfused makes no attention calls and takes flash's); below 0 where the topology gives none.
[[nodiscard]] std::pair<double, double> attention_efficiency(const GpuEfficiency& e, AttentionKernel kernel);

// GPU generations, for the NCCL constants that depend on them (tuning.cc: LL bandwidth caps,
// NVLink SHARP efficiency) and for what the hardware supports (NVLS needs NVSwitch 3, Hopper+).
// cdna3 is AMD's MI300 series: RCCL's tuner picks its collectives' algorithm and protocol
// (engine/collectives/rccl_model.hpp), timed with NCCL's Hopper constants (nccl_model.cpp).
enum class GpuArch { volta, ampere, hopper, blackwell, cdna3 };
inline constexpr std::array<std::string_view, 5> kGpuArchNames{"volta", "ampere", "hopper", "blackwell", "cdna3"};

// The host CPU's vendor: NCCL caps the LL protocol's multi-node bandwidth by it (tuning.cc llMaxBws).
enum class CpuVendor { intel, amd, arm };
inline constexpr std::array<std::string_view, 3> kCpuVendorNames{"intel", "amd", "arm"};

struct GpuSpec {
  std::string model;
  GpuArch arch = GpuArch::hopper;
  Bytes memory;
  FlopRate peak_bf16;
  FlopRate peak_fp32;
  FlopRate peak_fp8;    // dense fp8 tensor-core peak; 0: the GPU has no fp8 GEMMs
  FlopRate peak_mxfp8;  // dense MXFP8 (block-scaled) peak; 0: none
  ByteRate hbm_bandwidth;
  GpuEfficiency efficiency;
  Choice compute_model;   // a name of the engine's compute model registry (roofline)
  Seconds kernel_launch;  // fixed cost per kernel
  // Streaming multiprocessors (AMD: compute units) that a GEMM's output tiles are spread over, in
  // waves (engine/gemm_tiles.hpp); 0: not given, GEMMs priced without tile and wave quantization.
  int sms = 0;
  // Fraction of compute throughput lost while a collective runs on the GPU: NCCL kernels occupy
  // SMs (one CTA per channel) and HBM bandwidth for their copies. Default: compute overlapped with
  // communication measured 18.9 % slower on average (arXiv 2507.03114), 1 - 1 / 1.189.
  double comm_interference = 0.159;
  // Keys each query visits at which a flash-attention kernel runs at half its long-sequence rate:
  // a fixed cost per query tile (loading Q, the softmax epilogue, writing O) spread over the keys
  // it loops over, so a kernel over L keys takes (1 + L_half / L) x its FLOPs at that rate.
  double attention_half_keys = 240;
  // Share of a GEMM's output write (at the memory-bound rate) its main loop does not hide.
  double gemm_output_exposed = 0.45;
  // Spread of speed between GPUs of the SKU: each runs at exp(variation x z) of the nominal, z
  // standard normal (engine/variation.hpp).
  double variation = 0.015;
  // Kernel launches the CPU can have queued on the GPU before the next launch blocks; bounds how
  // far the CPU thread runs ahead (allocations happen at CPU time).
  int launch_queue = 1024;
  // Device memory the CUDA context holds outside PyTorch's allocator (driver state, loaded kernels).
  Bytes context_memory;
  // The GEMM library's workspace per (handle, stream) pair, allocated through PyTorch's allocator.
  Bytes blas_workspace;
};

// PyTorch's default GEMM workspace per (handle, stream) with CUBLAS_WORKSPACE_CONFIG unset
// (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize): cuBLAS 4,096 KiB x 8 on
// sm_90, 4,096 KiB x 2 + 16 KiB x 8 on other NVIDIA GPUs; ROCm 128 MiB on gfx94x, plus the
// hipBLASLt workspace ROCm keeps in a pool of its own (76 MiB, parseCUDABlasLtWorkspaceSize).
[[nodiscard]] double default_blas_workspace(GpuArch arch);

struct LinkSpec {
  ByteRate bandwidth;  // per direction
  Seconds latency;
  double efficiency = 1.0;  // fraction of bandwidth a collective's payload achieves
};

struct NodeSpec {
  int gpus = 8;
  LinkSpec nvlink;    // per GPU, through the NVSwitch
  LinkSpec pcie;      // host <-> GPU
  LinkSpec nic;       // one NIC (per direction)
  int nics = 8;       // NICs per node, dividing gpus; GPU l uses NIC l / (gpus / nics)
  bool nvls = false;  // the NVSwitch reduces and multicasts (NVLink SHARP): NCCL's NVLS algorithms
  // GPUs wired to each other without an NVSwitch: a link per pair with 1/(gpus - 1) of `nvlink`.
  bool nvlink_mesh = false;
  // Channels NCCL runs per communicator; each keeps one connection's buffers per peer.
  int nccl_channels = 16;
};

inline constexpr std::array<std::string_view, 2> kRoutingNames{"adaptive", "ecmp"};
enum class Routing { adaptive, ecmp };

struct FabricSpec {
  Choice kind;                  // single_switch | fat_tree | rail_optimized_fat_tree
  double oversubscription = 1;  // leaf down / up bandwidth
  int nodes_per_leaf = 1;       // nodes under one leaf switch; inter-leaf traffic shares its uplinks
  Seconds switch_latency;
  // How a fat tree spreads traffic between leaves over its spines: evenly (adaptive routing,
  // packet spraying), or each flow pinned to the spine its header hashes to (ECMP).
  Routing routing = Routing::adaptive;
  int spines = 0;               // spine switches a leaf's uplinks go to (ecmp)
  int qps_per_connection = 1;   // NCCL_IB_QPS_PER_CONNECTION: flows (queue pairs) per connection, each hashed on its own
  std::uint64_t ecmp_seed = 0;  // salt of the hash: which spine each flow lands on
};

// A node's NVMe drives, together (DeepSpeed ZeRO-Infinity offloads to them).
struct NvmeSpec {
  ByteRate read;   // sequential read, all the node's drives together; 0: no NVMe described
  ByteRate write;  // sequential write
  Bytes capacity;
};

struct HostSpec {
  ByteRate memory_bandwidth;  // CPU DRAM, used by the CPU-offload optimizer step
  CpuVendor cpu = CpuVendor::intel;
  // CPU seconds per kernel launched: the CPU issues each rank's ops one after another in program
  // order, and an op's GPU work starts no sooner than its first kernel is issued and ends no
  // sooner than its last (engine/scheduler.cpp). 0: no cost per kernel.
  Seconds kernel_dispatch;
  // CPU seconds FSDP's hooks spend per parameter tensor of a unit (Python over its parameters),
  // besides their kernels: FSDP1 at each unshard (with the reshard after it), FSDP2 at each
  // all-gather and each reduce-scatter (float8 all-gathers more). The engine runs the CPU model
  // wherever an op costs the CPU time.
  Seconds fsdp1_hook_per_tensor;
  Seconds fsdp2_hook_per_tensor;
  Seconds fsdp2_float8_hook_per_weight;  // more at an all-gather, per weight gathered in float8
  Bytes memory;                          // CPU DRAM per node; 0: not given (host memory is then not checked)
  NvmeSpec nvme;
};

struct TopologyConfig {
  std::string name;
  std::filesystem::path file;
  std::vector<std::filesystem::path> files;  // every file read: `file` and those it extends
  GpuSpec gpu;
  NodeSpec node;
  FabricSpec fabric;
  HostSpec host;

  // ECMP: the flows a NIC-to-NIC connection is to the switches' hash, each pinned to a spine of
  // its own: the NCCL channels one NIC carries (node.nccl_channels / node.nics, at least 1) times
  // fabric.qps_per_connection; 1 where traffic between leaves is spread evenly.
  [[nodiscard]] int ecmp_lanes() const {
    return fabric.routing == Routing::ecmp ? std::max(1, node.nccl_channels / node.nics) * fabric.qps_per_connection : 1;
  }
};

// Loads a topology file and the topologies it `extends`, then applies `overrides` (a mapping of
// dotted keys, may be null). A file that extends another starts from that file's keys: its own
// mappings merge into the other's key by key, any other value replaces the other's.
[[nodiscard]] TopologyConfig load_topology(const std::filesystem::path& file, const ConfigNode& overrides,
                                           const std::string& overrides_path);
// The same, reading files through `source`; a missing file is reported at `ref` when given.
[[nodiscard]] TopologyConfig load_topology(const std::filesystem::path& file, const ConfigNode& overrides,
                                           const std::string& overrides_path, const FileSource& source, const std::optional<FileRef>& ref);

// At most this many topology files extend one another.
inline constexpr std::size_t kMaxExtendsChain = 16;

// Topology settings, for `shardsim describe topology`.
[[nodiscard]] std::vector<Schema> topology_schemas();

}  // namespace shardsim::config
