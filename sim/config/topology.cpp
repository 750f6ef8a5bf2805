#include "config/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "config/overrides.hpp"
#include "config/yaml_load.hpp"
#include "core/reader.hpp"

namespace shardsim::config {
namespace {

// Bounds far beyond any real machine, close enough that no figure runs to zero or infinity: a
// link latency of 1e300 s or a bandwidth of 1e300 B/s is valid YAML and would give a run of 0
// tokens per second, or one of no time at all.
constexpr Range kDurationRange{0, 1, Dimension::seconds};  // latencies and launch costs: a second is already absurd
constexpr Range kBandwidthRange{1, 1e18, Dimension::byte_rate};
constexpr Range kFlopRateRange{1, 1e18, Dimension::flop_rate};
constexpr Range kFractionRange{1e-3, 1};

constexpr std::array kTopologyParams{
    ParamSpec{"name", "string", "", "what this cluster is, in a line"},
    ParamSpec{"description", "string", "-", "longer notes, sources of the figures"},
    ParamSpec{"extends", "file path", "-", "a topology this one starts from (relative to this file); keys here replace or extend its keys"},
    ParamSpec{"gpu", "mapping", "", "the accelerator (see gpu)"},
    ParamSpec{"node", "mapping", "", "one server: GPUs, NVLink, PCIe, NICs (see node)"},
    ParamSpec{"fabric", "mapping", "{kind: single_switch}", "the network between nodes (see fabric)"},
    ParamSpec{"host", "mapping", "{}", "the CPU side of a node (see host)"},
};
constexpr std::array kGpuParams{
    ParamSpec{"model", "string", "", "GPU model, e.g. H100-SXM"},
    ParamSpec{"arch",
              "",
              "hopper",
              "GPU generation: picks NCCL's per-generation constants (LL bandwidth caps, NVLS efficiency)",
              {},
              kGpuArchNames},
    ParamSpec{"memory", "size", "", "device memory, e.g. 80GiB", Range{1 << 20, 1e15, Dimension::bytes}},
    ParamSpec{"peak_flops", "mapping {bf16, fp32, fp8, mxfp8}", "", "dense peak compute per data type"},
    ParamSpec{"hbm_bandwidth", "bandwidth", "", "peak device-memory bandwidth", kBandwidthRange},
    ParamSpec{"efficiency", "mapping", "{}", "achievable fractions of peak (see gpu.efficiency)"},
    ParamSpec{"compute_model", "roofline", "roofline", "how compute ops are priced (engine/compute_model.hpp; shardsim describe compute)"},
    ParamSpec{"kernel_launch", "duration", "4us", "fixed cost of each kernel (launch and tail)", kDurationRange},
    ParamSpec{"sms", "integer", "-",
              "streaming multiprocessors (AMD: compute units) a GEMM's output tiles run on, wave after wave: a GEMM whose "
              "tiles leave the last wave part-empty runs slower than one that fills it (tile and wave quantization, "
              "engine/gemm_tiles.hpp), relative to a Llama 3 8B block's GEMMs, which gpu.efficiency.matmul describes; "
              "unset: GEMMs priced without it",
              Range{1, 4096}},
    ParamSpec{"comm_interference", "fraction", "0.159",
              "compute throughput lost while a collective runs (NCCL's SMs and HBM traffic): compute overlapped with "
              "communication runs 18.9 % slower on average, A100 / H100 / MI250 / MI210 (arXiv 2507.03114), so 1 - 1 / 1.189",
              Range{0, 0.9}},
    ParamSpec{"attention_half_keys", "number", "240",
              "keys per query at which flash attention runs at half its long-sequence rate (a fixed cost per query tile): "
              "240 fits FlashAttention-3 and Triton FA2 forward on H100 within 1.5 % (pytorch/benchmark#2391); taken for "
              "other GPUs and backward [assumed]; 0: no length effect",
              Range{0, 1e6}},
    ParamSpec{"variation", "fraction", "0.015",
              "spread of speed between GPUs of this SKU: each runs at exp(variation x z) of the nominal, z standard normal, "
              "and a job computes at the pace of its slowest GPU (engine/variation.hpp). 0.015 from two measurements: a 5 % "
              "and larger spread of achievable matmul FLOPS between the 8 GPUs of a node (stas00/ml-engineering, "
              "compute/accelerator, 'Not all accelerators are created equal': the expected range of 8 normals is 2.85 "
              "sigma, so 1.8 %) and 8 % average variation across clusters of hundreds to thousands of one SKU (Sinha et "
              "al., SC'22: a range of about 6.5 sigma, 1.2 %); 0: every GPU alike",
              Range{0, 0.5}},
    ParamSpec{"gemm_output_exposed", "fraction", "0.45",
              "share of a GEMM's output write, at the memory-bound rate, that its main loop does not hide: a GEMM of "
              "reduction length K costs k0 / K more (k0 = this x GEMM rate x output element bytes / (2 x memory rate), "
              "106 for bf16 on H100), relative to a Llama 3 8B block's GEMMs. 0.45 from XLA's measured H100 matmul "
              "table (matmul_interpolator_data.h, sm_90): t = 6 us + F / 847 TFLOPS + 0.53 x output bytes / 3.35 TB/s "
              "fits 28 shapes of 4,096-16,384 rows within 3.3 % (FLOPs and a fixed cost: 23 %); 0.53 of peak HBM is 0.45 of "
              "the 0.85 memory-bound rate. Other GPUs [assumed]; 0: GEMMs by FLOPs alone",
              Range{0, 1}},
    ParamSpec{"launch_queue", "integer", "1024",
              "kernel launches the CPU can have pending before a launch blocks: how far the CPU runs ahead of the GPU "
              "(undocumented by CUDA; 1024 is the depth commonly observed)",
              Range{16, 1 << 20}},
    ParamSpec{"context_memory", "size", "400MB",
              "device memory the CUDA context takes outside PyTorch's allocator (driver, loaded kernels): around 400 MB with "
              "CUDA 11.7+ lazy module loading, PyTorch's default (pytorch/pytorch#109888; 287 MB right after the first "
              "kernel, pytorch/pytorch#86509)",
              Range{0, 1e12, Dimension::bytes}},
    ParamSpec{"blas_workspace", "size", "-",
              "the GEMM library's workspace PyTorch allocates through its caching allocator per (handle, stream), so once for "
              "the forward thread and once for autograd's backward thread; unset: PyTorch's default by gpu.arch "
              "(aten/src/ATen/cuda/CublasHandlePool.cpp): cuBLAS 32 MiB on Hopper, 8,519,680 B on other NVIDIA GPUs; "
              "ROCm 128 MiB (gfx94x) plus hipBLASLt's 76 MiB. Set it from CUBLAS_WORKSPACE_CONFIG if your job sets that",
              Range{0, 1e11, Dimension::bytes}},
};
constexpr std::array kPeakParams{
    ParamSpec{"bf16", "compute rate", "", "dense bf16 tensor-core peak", kFlopRateRange},
    ParamSpec{"fp32", "compute rate", "", "fp32 peak (non-tensor-core)", kFlopRateRange},
    ParamSpec{"fp8", "compute rate", "-", "dense fp8 (e4m3 / e5m2) tensor-core peak; absent: no fp8 GEMMs (training.float8 refused)",
              kFlopRateRange},
    ParamSpec{"mxfp8", "compute rate", "-", "dense MXFP8 (block-scaled fp8) peak; absent: no MXFP8 (recipe mxfp8 refused)", kFlopRateRange},
};
constexpr std::array kEfficiencyParams{
    ParamSpec{"matmul", "fraction", "0.6", "large bf16 GEMMs, as a fraction of peak_flops", kFractionRange},
    ParamSpec{"attention_forward", "fraction", "0.35", "FlashAttention-2 forward, fraction of peak", kFractionRange},
    ParamSpec{"attention_backward", "fraction", "0.28", "FlashAttention-2 backward, fraction of peak", kFractionRange},
    ParamSpec{"memory", "fraction", "0.8", "memory-bound kernels, fraction of hbm_bandwidth", kFractionRange},
    ParamSpec{"memory_column_cast", "fraction", "0.19",
              "kernels that scale and cast a tensor along its columns (rowwise float8's column-wise casts, whose reads "
              "Inductor does not coalesce), fraction of hbm_bandwidth; 0.19: 0.6-0.7 TB/s on an H100 (pytorch/pytorch#149982)",
              kFractionRange},
    ParamSpec{"attention_cudnn_forward", "fraction", "-",
              "cuDNN's fused attention forward (training.attention: cudnn), fraction of peak; unset: cudnn refused", kFractionRange},
    ParamSpec{"attention_cudnn_backward", "fraction", "-", "cuDNN's fused attention backward, fraction of peak", kFractionRange},
    ParamSpec{"attention_flash3_forward", "fraction", "-",
              "FlashAttention-3 forward (training.attention: flash3), fraction of peak; unset: flash3 refused", kFractionRange},
    ParamSpec{"attention_flash3_backward", "fraction", "-", "FlashAttention-3 backward, fraction of peak", kFractionRange},
    ParamSpec{"matmul_fp8", "fraction", "-",
              "large fp8 GEMMs with tensorwise scales, fraction of peak_flops.fp8; unset: matmul's (torchao's float8 roofline "
              "assumes the same fraction)",
              kFractionRange},
    ParamSpec{"matmul_fp8_rowwise", "fraction", "-", "fp8 GEMMs with rowwise scales, fraction of peak_flops.fp8; unset: matmul_fp8's",
              kFractionRange},
    ParamSpec{"matmul_mxfp8", "fraction", "-", "MXFP8 GEMMs, fraction of peak_flops.mxfp8; unset: matmul_fp8's", kFractionRange},
    ParamSpec{"matmul_fp8_precise", "fraction", "-",
              "fp8 GEMMs with precise accumulation (use_fast_accum=False: torchao's gradient GEMMs, tensorwise and rowwise), "
              "fraction of peak_flops.fp8; unset: matmul_fp8's",
              kFractionRange},
};
constexpr std::array kNodeParams{
    ParamSpec{"gpus", "integer", "8", "GPUs per node", Range{1, 1024}},
    ParamSpec{"nvlink", "link", "", "per-GPU NVLink bandwidth through the NVSwitch, per direction"},
    ParamSpec{"pcie", "link", "{bandwidth: 25GB/s, latency: 2us}", "host <-> GPU link (CPU offload)"},
    ParamSpec{"nic", "link", "", "one network interface (per direction)"},
    ParamSpec{"nics", "integer dividing gpus", "-",
              "NICs per node (default: one per GPU); with fewer, GPUs 0..gpus/nics-1 share the first, and so on", Range{1, 1024}},
    ParamSpec{"nvls", "bool", "false", "the NVSwitch reduces and multicasts (NVLink SHARP, NVSwitch 3 and later): NCCL's NVLS algorithms"},
    ParamSpec{"nvlink_mesh", "bool", "false",
              "GPUs wired to each other without an NVSwitch (HGX 4-GPU boards): each pair has 1/(gpus - 1) of a GPU's nvlink "
              "bandwidth, and a group's rings use the pairs among its members"},
    ParamSpec{"nccl_channels", "integer", "16",
              "channels NCCL runs per communicator (its log's 'coll channels'): each keeps one connection's buffers per peer, "
              "outside PyTorch's allocator. 16 as an 8 x H800 node logs (nvidia/nccl#892); NCCL's topology search picks it "
              "from the links, so a log of your own job gives the figure",
              Range{1, 64}},
};
constexpr std::array kLinkParams{
    ParamSpec{"bandwidth", "bandwidth", "", "per direction, e.g. 400Gbps or 450GB/s", kBandwidthRange},
    ParamSpec{"latency", "duration", "1us",
              "one-way latency of one hop. Collectives: NVLink steps cost NCCL's per-step constants; a NIC's latency plus "
              "fabric.switch_latency is the network latency NCCL adds to each inter-node step (graph->latencyInter)",
              kDurationRange},
    ParamSpec{"efficiency", "fraction", "1", "fraction of bandwidth a collective's payload achieves (NCCL busbw / link rate)",
              kFractionRange},
};
constexpr std::array kFabricParams{
    ParamSpec{"kind", "single_switch | fat_tree | rail_optimized_fat_tree", "single_switch", "how nodes are connected"},
    ParamSpec{"oversubscription", "number", "1", "leaf downlink / uplink bandwidth ratio", Range{1, 1024}},
    ParamSpec{"nodes_per_leaf", "integer", "1",
              "nodes under one leaf switch (fat_tree): traffic between leaves crosses their uplinks, which those nodes share",
              Range{1, 1 << 20}},
    ParamSpec{"switch_latency", "duration", "1us", "latency of the switches between two nodes, added to each inter-node collective step",
              kDurationRange},
    ParamSpec{"routing",
              "",
              "adaptive",
              "fat_tree: how traffic between leaves spreads over the spines. adaptive: evenly (InfiniBand adaptive routing, "
              "packet spraying); ecmp: each flow (a queue pair of an NCCL channel's connection) pinned to the spine its header "
              "hashes to, so that flows collide on some uplinks while others idle (RoCE / Ethernet)",
              {},
              kRoutingNames},
    ParamSpec{"spines", "integer", "-",
              "fat_tree: spine switches each leaf has an uplink to, the paths ECMP hashes over (needed by routing ecmp; "
              "adaptive routing spreads evenly over them, so their number does not change its result)",
              Range{1, 4096}},
    ParamSpec{"qps_per_connection", "integer", "1",
              "routing ecmp: queue pairs per NCCL connection (NCCL_IB_QPS_PER_CONNECTION, default 1), each a flow of its own to "
              "the hash; more spread the traffic over more spines",
              Range{1, 128}},
    ParamSpec{"ecmp_seed", "integer", "0", "routing ecmp: salt of the hash that picks each flow's spine (another seed, another draw)",
              Range{0, 1e15}},
};
constexpr std::array kHostParams{
    ParamSpec{"memory_bandwidth", "bandwidth", "100GB/s", "CPU DRAM bandwidth (CPU-offloaded optimizer)", kBandwidthRange},
    ParamSpec{"cpu", "", "intel", "CPU vendor: NCCL caps the LL protocol's multi-node bandwidth by it", {}, kCpuVendorNames},
    ParamSpec{"kernel_dispatch", "duration", "0us",
              "CPU time the training process spends on each kernel it launches (Python, PyTorch's dispatcher, the "
              "launch call): the GPU runs no sooner than the CPU issues; 0 leaves the CPU out (docs/fidelity.md)",
              kDurationRange},
    ParamSpec{"fsdp1_hook_per_tensor", "duration", "20us",
              "CPU time FSDP1's hooks spend per original parameter of a unit at each unshard and the reshard after it "
              "(_use_unsharded_views, _writeback_orig_params, _use_sharded_views: pytorch#96958, 400 parameters: 4.27 + 1.07 + "
              "2.75 ms); the GPU runs no sooner than the CPU issues (docs/fidelity.md)",
              kDurationRange},
    ParamSpec{"fsdp2_hook_per_tensor", "duration", "41us",
              "CPU time fully_shard's hooks spend per parameter of a unit at each all-gather and each reduce-scatter "
              "(pytorch#133369: 0.37 ms for a Llama 3 8B block's 9 parameters; the reduce-scatter assumed alike)",
              kDurationRange},
    ParamSpec{"fsdp2_float8_hook_per_weight", "duration", "90us",
              "CPU time fully_shard's all-gather adds per weight it gathers in float8 (torchao's fsdp_pre_all_gather and "
              "fsdp_post_all_gather: pytorch#133369, 1.0 ms for a Llama 3 8B block with its 7 linears' weights in float8 against "
              "0.37 ms without)",
              kDurationRange},
    ParamSpec{"memory", "size", "-", "CPU DRAM per node (checked against what offloading puts there); absent: not checked",
              Range{1 << 20, 1e18, Dimension::bytes}},
    ParamSpec{"nvme", "mapping {read, write, capacity}", "-",
              "the node's NVMe drives together (ZeRO-Infinity offload): sequential read and write bandwidth, capacity"},
};
constexpr std::array kNvmeParams{
    ParamSpec{"read", "bandwidth", "", "sequential read of all the node's drives together", kBandwidthRange},
    ParamSpec{"write", "bandwidth", "", "sequential write of all the node's drives together", kBandwidthRange},
    ParamSpec{"capacity", "size", "", "usable capacity of all the drives", Range{1 << 20, 1e18, Dimension::bytes}},
};

constexpr Schema kTopologySchema{"topology", "a cluster: GPUs, nodes and the fabric between them", kTopologyParams};
constexpr Schema kGpuSchema{"gpu", "the accelerator", kGpuParams};
constexpr Schema kPeakSchema{"gpu.peak_flops", "dense peak compute", kPeakParams};
constexpr Schema kEfficiencySchema{"gpu.efficiency", "achievable fractions of peak used by the compute model", kEfficiencyParams};
constexpr Schema kNodeSchema{"node", "one server", kNodeParams};
constexpr Schema kLinkSchema{"link", "a point-to-point link", kLinkParams};
constexpr Schema kFabricSchema{"fabric", "the network between nodes", kFabricParams};
constexpr Schema kHostSchema{"host", "the CPU side of a node", kHostParams};
constexpr Schema kNvmeSchema{"host.nvme", "a node's NVMe drives", kNvmeParams};

const ConfigNode& child_or_default(const Reader& r, std::string_view key, ConfigNode& scratch) {
  if (const ConfigNode* n = r.node(key)) return *n;
  scratch = ConfigNode::make_map(r.where(key));
  return scratch;
}

LinkSpec read_link(const Reader& parent, std::string_view key, std::string_view default_bw) {
  ConfigNode scratch;
  const ConfigNode* n = parent.node(key);
  if (n == nullptr) {
    if (default_bw.empty()) parent.fail(key, "missing required key (expected a link: {bandwidth: ..., latency: ...})");
    scratch = ConfigNode::make_map(parent.where(key));
    scratch.set("bandwidth", ConfigNode::make_scalar(std::string(default_bw), parent.where(key)), parent.where(key));
    n = &scratch;
  }
  Reader r(*n, parent.path_of(key), kLinkSchema);
  r.finish();  // first: a misspelt key is reported as such, not as the key it misses
  LinkSpec l;
  l.bandwidth = ByteRate(r.quantity("bandwidth", Dimension::byte_rate));
  l.latency = Seconds(r.quantity("latency", Dimension::seconds));
  l.efficiency = r.number("efficiency");
  return l;
}

GpuSpec read_gpu(const Reader& top) {
  Reader r(*top.node("gpu"), "gpu", kGpuSchema);
  r.finish();
  GpuSpec g;
  g.model = r.text("model");
  g.arch = static_cast<GpuArch>(r.choice_index("arch"));
  g.memory = Bytes(r.quantity("memory", Dimension::bytes));
  {
    const ConfigNode* peak = r.node("peak_flops");
    if (peak == nullptr) r.fail("peak_flops", "missing required key (expected {bf16: ..., fp32: ...})");
    Reader p(*peak, "gpu.peak_flops", kPeakSchema);
    p.finish();
    g.peak_bf16 = FlopRate(p.quantity("bf16", Dimension::flop_rate));
    g.peak_fp32 = FlopRate(p.quantity("fp32", Dimension::flop_rate));
    g.peak_fp8 = FlopRate(p.opt_quantity("fp8", Dimension::flop_rate).value_or(0));
    g.peak_mxfp8 = FlopRate(p.opt_quantity("mxfp8", Dimension::flop_rate).value_or(0));
  }
  g.hbm_bandwidth = ByteRate(r.quantity("hbm_bandwidth", Dimension::byte_rate));
  {
    ConfigNode scratch;
    Reader e(child_or_default(r, "efficiency", scratch), "gpu.efficiency", kEfficiencySchema);
    e.finish();
    g.efficiency.matmul = e.number("matmul");
    g.efficiency.attention_forward = e.number("attention_forward");
    g.efficiency.attention_backward = e.number("attention_backward");
    g.efficiency.memory = e.number("memory");
    g.efficiency.memory_column_cast = e.number("memory_column_cast");
    g.efficiency.matmul_fp8 = e.opt_number("matmul_fp8", kFractionRange.min, kFractionRange.max).value_or(-1);
    g.efficiency.matmul_fp8_rowwise = e.opt_number("matmul_fp8_rowwise", kFractionRange.min, kFractionRange.max).value_or(-1);
    g.efficiency.matmul_mxfp8 = e.opt_number("matmul_mxfp8", kFractionRange.min, kFractionRange.max).value_or(-1);
    g.efficiency.matmul_fp8_precise = e.opt_number("matmul_fp8_precise", kFractionRange.min, kFractionRange.max).value_or(-1);
    for (const auto& [key, field] : {std::pair{"attention_cudnn_forward", &GpuEfficiency::attention_cudnn_forward},
                                     std::pair{"attention_cudnn_backward", &GpuEfficiency::attention_cudnn_backward},
                                     std::pair{"attention_flash3_forward", &GpuEfficiency::attention_flash3_forward},
                                     std::pair{"attention_flash3_backward", &GpuEfficiency::attention_flash3_backward}}) {
      g.efficiency.*field = e.opt_number(key, kFractionRange.min, kFractionRange.max).value_or(-1);
    }
  }
  g.compute_model = Choice{r.text("compute_model"), "gpu.compute_model", r.where("compute_model"), ConfigNode{}};
  g.kernel_launch = Seconds(r.quantity("kernel_launch", Dimension::seconds));
  g.sms = static_cast<int>(r.opt_integer("sms").value_or(0));
  g.comm_interference = r.number("comm_interference");
  g.attention_half_keys = r.number("attention_half_keys");
  g.launch_queue = static_cast<int>(r.integer("launch_queue"));
  g.gemm_output_exposed = r.number("gemm_output_exposed");
  g.variation = r.number("variation");
  {
    // The exposed output write of a GEMM costs k0 / K of its FLOP time (engine/compute_model.hpp);
    // past k0 = 1,000 the figures contradict each other (the write alone would outlast the FLOPs of
    // the GEMMs the matmul rate describes). Real GPUs are near 100-200.
    const double memory_rate = g.hbm_bandwidth.value() * g.efficiency.memory;
    const double gemm_rate = std::max({g.peak_bf16.value() * g.efficiency.matmul, g.peak_fp8.value() * g.efficiency.fp8(),
                                       g.peak_fp8.value() * g.efficiency.fp8_rowwise(), g.peak_fp8.value() * g.efficiency.fp8_precise(),
                                       g.peak_mxfp8.value() * g.efficiency.mxfp8()});
    const double k0 = g.gemm_output_exposed * gemm_rate / memory_rate;
    if (k0 > 1000)
      r.fail("gemm_output_exposed",
             fmt::format("with GEMMs at {:.0f} TFLOPS and memory-bound kernels at {:.0f} GB/s, the exposed output write costs a "
                         "GEMM as much as {:.0f} of its reduction length (expected at most 1,000: lower this, or check "
                         "hbm_bandwidth and efficiency.memory)",
                         gemm_rate / 1e12, memory_rate / 1e9, k0));
  }
  g.context_memory = Bytes(r.quantity("context_memory", Dimension::bytes));
  g.blas_workspace = Bytes(r.opt_quantity("blas_workspace", Dimension::bytes).value_or(default_blas_workspace(g.arch)));
  return g;
}

NodeSpec read_node(const Reader& top) {
  Reader r(*top.node("node"), "node", kNodeSchema);
  r.finish();
  NodeSpec n;
  n.gpus = static_cast<int>(r.integer("gpus"));
  n.nvlink = read_link(r, "nvlink", "");
  n.pcie = read_link(r, "pcie", "25GB/s");
  n.nic = read_link(r, "nic", "");
  n.nics = static_cast<int>(r.opt_integer("nics", 1, n.gpus).value_or(n.gpus));
  if (n.gpus % n.nics != 0) {
    r.fail("nics", fmt::format("expected a divisor of node.gpus ({}) so that as many GPUs share each NIC; got {}", n.gpus, n.nics));
  }
  n.nvls = r.boolean("nvls");
  n.nvlink_mesh = r.boolean("nvlink_mesh");
  n.nccl_channels = static_cast<int>(r.integer("nccl_channels"));
  if (n.nvls && n.nvlink_mesh)
    r.fail("nvls", "NVLink SHARP needs an NVSwitch; node.nvlink_mesh wires the GPUs without one (expected one of them)");
  if (n.nvlink_mesh && n.gpus < 2) r.fail("nvlink_mesh", fmt::format("a mesh needs at least 2 GPUs in the node; node.gpus is {}", n.gpus));
  return n;
}

FabricSpec read_fabric(const Reader& top) {
  ConfigNode scratch;
  const ConfigNode& node = child_or_default(top, "fabric", scratch);
  Reader r(node, "fabric", kFabricSchema);
  r.finish();
  FabricSpec f;
  f.kind = Choice{r.text("kind"), "fabric.kind", r.where("kind"), node};
  f.oversubscription = r.number("oversubscription");
  f.nodes_per_leaf = static_cast<int>(r.integer("nodes_per_leaf"));
  f.switch_latency = Seconds(r.quantity("switch_latency", Dimension::seconds));
  f.routing = static_cast<Routing>(r.choice_index("routing"));
  const bool ecmp = f.routing == Routing::ecmp;
  if (ecmp && f.kind.name != "fat_tree") {
    r.fail("routing", fmt::format("ECMP hashes flows over a fat tree's spines; fabric.kind is {} (expected fat_tree, or routing: adaptive)",
                                  f.kind.name));
  }
  if (ecmp && !r.has("spines")) r.fail("routing", "routing: ecmp needs fabric.spines, the spine switches it hashes flows over");
  // The spines are the fabric's (adaptive routing spreads evenly over them, whatever their number);
  // the queue pairs and the seed only matter to a hash.
  for (const char* key : {"qps_per_connection", "ecmp_seed"}) {
    if (!ecmp && r.has(key))
      r.fail(key, fmt::format("fabric.{} applies to routing: ecmp; routing is adaptive (expected it removed, or routing: ecmp)", key));
  }
  if (r.has("spines") && f.kind.name != "fat_tree") {
    r.fail("spines", fmt::format("spine switches are a fat tree's; fabric.kind is {} (expected fat_tree, or no spines)", f.kind.name));
  }
  if (r.has("spines")) f.spines = static_cast<int>(r.integer("spines"));
  if (ecmp) {
    f.qps_per_connection = static_cast<int>(r.integer("qps_per_connection"));
    f.ecmp_seed = static_cast<std::uint64_t>(r.integer("ecmp_seed"));
  }
  return f;
}

// Loads `file` and, recursively, the file it extends; `chain` holds the files loaded so far (the
// first is the one the user named) to detect cycles and to show them.
ConfigNode load_extended(const std::filesystem::path& file, const FileSource& source, const std::optional<FileRef>& ref,
                         std::vector<std::string>& chain) {
  ConfigNode root = load_yaml_file(file, source, ref);
  if (root.is_null())
    throw ConfigError(Location{file.string(), 1, 1}, "", "empty file; expected a topology mapping (name, gpu, node, fabric)");
  const Reader r(root, "", kTopologySchema);  // throws unless root is a mapping
  chain.push_back(file.lexically_normal().string());
  if (!r.has("extends")) return root;
  const std::filesystem::path base_file = r.file_path("extends");
  const Location ext_where = r.where("extends");
  const std::string base_name = base_file.lexically_normal().string();
  if (std::find(chain.begin(), chain.end(), base_name) != chain.end()) {
    std::vector<std::string_view> names(chain.begin(), chain.end());
    names.emplace_back(base_name);
    throw ConfigError(ext_where, "extends",
                      fmt::format("cyclic reference: {}; expected a chain of topologies that ends", join(names, " -> ")));
  }
  if (chain.size() >= kMaxExtendsChain) {
    throw ConfigError(ext_where, "extends",
                      fmt::format("more than {} topology files extend one another ({} -> ...); expected a shorter chain", kMaxExtendsChain,
                                  chain.front()));
  }
  std::erase_if(root.entries, [](const ConfigEntry& e) { return e.key == "extends"; });
  ConfigNode merged = load_extended(base_file, source, FileRef{ext_where, "extends"}, chain);
  merge_into(merged, std::move(root));
  return merged;
}

}  // namespace

TopologyConfig load_topology(const std::filesystem::path& file, const ConfigNode& overrides, const std::string& overrides_path) {
  return load_topology(file, overrides, overrides_path, DiskFiles{}, std::nullopt);
}

TopologyConfig load_topology(const std::filesystem::path& file, const ConfigNode& overrides, const std::string& overrides_path,
                             const FileSource& source, const std::optional<FileRef>& ref) {
  std::vector<std::string> chain;
  ConfigNode root = load_extended(file, source, ref, chain);
  for (auto& o : flatten_overrides(overrides, overrides_path)) {
    set_dotted(root, o.key, std::move(o.value), o.key_where);
  }
  Reader top(root, "", kTopologySchema);
  top.finish();
  if (top.has("extends")) top.fail("extends", "can only be written in a topology file, not set through overrides");
  TopologyConfig t;
  t.file = file;
  t.files.assign(chain.begin(), chain.end());
  t.name = top.text("name");
  if (top.has("description")) (void)top.text("description");
  if (top.node("gpu") == nullptr) top.fail("gpu", "missing required key (expected the GPU: model, memory, peak_flops, hbm_bandwidth)");
  if (top.node("node") == nullptr) top.fail("node", "missing required key (expected the node: gpus, nvlink, nic)");
  t.gpu = read_gpu(top);
  t.node = read_node(top);
  t.fabric = read_fabric(top);
  {
    ConfigNode scratch;
    Reader h(child_or_default(top, "host", scratch), "host", kHostSchema);
    h.finish();
    t.host.memory_bandwidth = ByteRate(h.quantity("memory_bandwidth", Dimension::byte_rate));
    t.host.cpu = static_cast<CpuVendor>(h.choice_index("cpu"));
    t.host.kernel_dispatch = Seconds(h.quantity("kernel_dispatch", Dimension::seconds));
    t.host.fsdp1_hook_per_tensor = Seconds(h.quantity("fsdp1_hook_per_tensor", Dimension::seconds));
    t.host.fsdp2_hook_per_tensor = Seconds(h.quantity("fsdp2_hook_per_tensor", Dimension::seconds));
    t.host.fsdp2_float8_hook_per_weight = Seconds(h.quantity("fsdp2_float8_hook_per_weight", Dimension::seconds));
    t.host.memory = Bytes(h.opt_quantity("memory", Dimension::bytes).value_or(0));
    if (const ConfigNode* nvme = h.node("nvme")) {
      if (!nvme->is_map()) h.fail("nvme", fmt::format("expected a mapping {{read, write, capacity}}; got {}", nvme->describe()));
      Reader n(*nvme, "host.nvme", kNvmeSchema);
      n.finish();
      t.host.nvme.read = ByteRate(n.quantity("read", Dimension::byte_rate));
      t.host.nvme.write = ByteRate(n.quantity("write", Dimension::byte_rate));
      t.host.nvme.capacity = Bytes(n.quantity("capacity", Dimension::bytes));
    }
  }
  if (t.node.nvls && (t.gpu.arch == GpuArch::volta || t.gpu.arch == GpuArch::ampere || t.gpu.arch == GpuArch::cdna3)) {
    Reader node(*root.find("node"), "node", kNodeSchema);
    node.fail("nvls", fmt::format("NVLink SHARP needs NVSwitch 3 (Hopper or later); gpu.arch is {}",
                                  kGpuArchNames[static_cast<std::size_t>(t.gpu.arch)]));
  }
  return t;
}

std::vector<Schema> topology_schemas() {
  return {kTopologySchema, kGpuSchema, kPeakSchema, kEfficiencySchema, kNodeSchema, kLinkSchema, kFabricSchema, kHostSchema, kNvmeSchema};
}

double default_blas_workspace(GpuArch arch) {
  constexpr double KiB = 1024.0;
  constexpr double MiB = 1024.0 * KiB;
  switch (arch) {
    case GpuArch::hopper:
      return 4096 * KiB * 8;
    case GpuArch::cdna3:
      return 128 * MiB + 76 * MiB;
    case GpuArch::volta:
    case GpuArch::ampere:
    case GpuArch::blackwell:
      break;
  }
  return 4096 * KiB * 2 + 16 * KiB * 8;
}

std::pair<double, double> attention_efficiency(const GpuEfficiency& e, AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::cudnn:
      return {e.attention_cudnn_forward, e.attention_cudnn_backward};
    case AttentionKernel::flash3:
      return {e.attention_flash3_forward, e.attention_flash3_backward};
    case AttentionKernel::flash:
    case AttentionKernel::unfused:
      break;
  }
  return {e.attention_forward, e.attention_backward};
}

}  // namespace shardsim::config
