// The result of one point, and the two forms it is written in: a results.jsonl line (the record
// resume reads back) and a results.csv row (for spreadsheets and pandas).
//
//   {"point":4,"set":["fsdp.backward_prefetch=post","fsdp.wrap.blocks_per_unit=2"],"status":"ok",
//    "comm_s":0.15,...,"step_time_s":2.94,...}
//   {"point":5,"set":[...],"status":"error","error":"--set fsdp.wrap.blocks_per_unit=0: error: ..."}
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::sweep {

// The figures of a point's summary (report::summary_json) that results.csv shows, after the
// swept keys; results.jsonl keeps the whole summary.
inline constexpr std::array<std::string_view, 11> kMetricColumns{
    "step_time_s",    "tokens_per_s_per_gpu", "tflops_per_gpu",   "mfu", "compute_s", "comm_s",
    "exposed_comm_s", "peak_memory_bytes",    "gpu_memory_bytes", "oom", "world_size"};

struct PointResult {
  std::size_t index = 0;
  std::vector<std::string> assignments;               // the point's identity
  std::string error;                                  // empty when the point was simulated
  nlohmann::json metrics = nlohmann::json::object();  // its summary, when it was simulated

  [[nodiscard]] bool ok() const { return error.empty(); }
  [[nodiscard]] double number(std::string_view key) const;  // NaN when absent or not a number
  [[nodiscard]] bool oom() const;                           // the summary's "oom", or allocator retries
  // What the GPU leaves to PyTorch's allocator: gpu_memory_bytes less the CUDA context and NCCL's
  // buffers (outside_allocator_bytes; none in results written before shardsim counted them).
  [[nodiscard]] double allocator_memory() const;
  [[nodiscard]] bool fits() const { return ok() && !oom(); }
};

// One results.jsonl line, without the newline.
[[nodiscard]] std::string jsonl_line(const PointResult& r);
// Parses one line; nullopt when it is not a complete record (a torn or damaged line).
[[nodiscard]] std::optional<PointResult> parse_jsonl_line(std::string_view line);

// results.csv: point, one column per swept key (its value), status, kMetricColumns, error.
[[nodiscard]] std::string csv_header(std::span<const std::string> keys);
[[nodiscard]] std::string csv_row(const PointResult& r, std::span<const std::string> keys);

// The value `r` gives to `key` ("fsdp.wrap.blocks_per_unit=2" -> "2"), or "" when unset.
[[nodiscard]] std::string value_of(const PointResult& r, std::string_view key);

struct ReadResults {
  std::vector<PointResult> rows;  // in file order
  std::size_t damaged = 0;        // complete lines that are not records (skipped)
  bool torn_tail = false;         // the file ended inside a line (a write cut short): skipped
};

// Reads a results.jsonl; a missing file reads as empty. Throws RuntimeError if unreadable.
[[nodiscard]] ReadResults read_jsonl(const std::filesystem::path& file);

}  // namespace shardsim::sweep
