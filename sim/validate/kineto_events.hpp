// What `shardsim compare` keeps of a PyTorch profiler (Kineto) trace, read in one streaming pass
// (nlohmann's SAX interface) so that memory follows the events kept, not the file: GPU work
// (kernels, memcpy, memset) with the arguments PyTorch records on communication kernels, the
// step and optimizer annotations, the CPU launch of each GPU op (its correlation id and thread),
// and the GEMM and attention operators with their shapes (for `shardsim calibrate`). Other CPU
// operators, Python frames, flow arrows and instant events are counted and dropped.
//
// Kineto's JSON (times in microseconds):
//   {"distributedInfo": {"rank": 3, "world_size": 8, ...}, "deviceProperties": [{"name": ...}],
//    "traceEvents": [
//      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "ts": ..., "dur": ...},
//      {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#4", ...},     (recent PyTorch)
//      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "args": {"correlation": 7}},
//      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic", "ts": ..., "dur": ...,
//       "args": {"stream": 40, "correlation": 7, "Collective name": "allreduce",
//                "In msg nelems": 6637568, "Out msg nelems": 6637568, "dtype": "Float",
//                "Group size": 2, "Process Group Name": "0", "Process Group Description": "default_pg",
//                "Process Group Ranks": "[0, 1]"}}]}
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::validate {

// The arguments PyTorch (c10d's ParamCommsUtils) records on a collective's kernel.
struct CommArgs {
  std::string collective;         // "Collective name": allreduce, _allgather_base, reduce_scatter_tensor_coalesced, ...
  std::int64_t in_nelems = -1;    // "In msg nelems" (-1: absent)
  std::int64_t out_nelems = -1;   // "Out msg nelems"
  int group_size = 0;             // "Group size" (0: absent)
  std::string dtype;              // "dtype": Float, BFloat16, ...
  std::string group_name;         // "Process Group Name"
  std::string group_description;  // "Process Group Description": default_pg, mesh_dp_shard, ...
  std::string group_ranks;        // "Process Group Ranks": "[0, 1]"
};

enum class GpuOpKind : std::uint8_t { kernel, memcpy, memset };

struct GpuOp {
  int name = 0;  // index into KinetoEvents::names
  GpuOpKind kind = GpuOpKind::kernel;
  double ts = 0;  // microseconds, as in the file
  double dur = 0;
  std::int64_t stream = -1;       // args.stream (-1: absent; the tid is used then)
  std::int64_t correlation = -1;  // args.correlation: ties the op to its CPU launch
  int comm = -1;                  // index into KinetoEvents::comms, -1 without collective arguments
};

// A ProfilerStep#N or Optimizer.step#... annotation, on the CPU or (recent PyTorch) the GPU.
struct Marker {
  std::string name;
  bool gpu = false;
  double ts = 0;
  double dur = 0;
};

// A CUDA/HIP runtime (or driver) call on CPU thread `tid`: one that launched GPU work shares its
// correlation id with a GpuOp; `synchronizes` marks the calls that block the CPU until the GPU
// has run something (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, a
// synchronous cudaMemcpy, and their hip names).
struct Launch {
  std::int64_t correlation = 0;
  double ts = 0;
  std::int64_t tid = -1;
  double dur = 0;
  bool synchronizes = false;
};

// A CPU operator whose shapes price a kernel (GEMMs and fused attention; kernel_samples.hpp says
// which), as PyTorch records it with record_shapes=True: "Input Dims", "Input type" ("c10::BFloat16",
// "Scalar", ...) and "Concrete Inputs" (scalars as text: "False", "0.125", ...; "" for tensors).
struct ShapedOp {
  std::string name;
  std::int64_t tid = -1;
  double ts = 0;  // microseconds
  double dur = 0;
  std::vector<std::vector<std::int64_t>> dims;
  std::vector<std::string> types;
  std::vector<std::string> concrete;
};

// Whether the reader keeps a CPU operator of this name as a ShapedOp (kernel_samples.cpp).
[[nodiscard]] bool keeps_shapes_of(std::string_view cpu_op);

struct KinetoEvents {
  std::string file;
  std::vector<std::string> names;  // kernel names, each once
  std::vector<GpuOp> gpu;
  std::vector<CommArgs> comms;
  std::vector<Marker> markers;
  std::vector<Launch> launches;
  std::vector<ShapedOp> shaped_ops;  // in file order
  std::optional<int> rank;           // distributedInfo.rank
  std::optional<int> world_size;     // distributedInfo.world_size
  std::string backend;               // distributedInfo.backend
  std::string device;                // deviceProperties[0].name
  std::int64_t events = 0;           // trace events read, kept or not
};

// A JSON file read by read_trace_file: the events of a Kineto trace, and the document's other
// top-level keys as a DOM (all of it for a file that is not a trace, e.g. a shardsim timeline).
struct ParsedTraceFile {
  bool is_kineto = false;  // the file had a "traceEvents" array (or was a bare array of events)
  KinetoEvents kineto;
  nlohmann::json document;  // everything but "traceEvents"
};

// Reads `file` (.json or .json.gz) in one pass. Throws ConfigError naming the file, with the
// line and column of a JSON syntax error, or the place a gzip stream breaks off.
[[nodiscard]] ParsedTraceFile read_trace_file(const std::filesystem::path& file);

}  // namespace shardsim::validate
