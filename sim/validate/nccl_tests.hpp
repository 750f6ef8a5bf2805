// nccl-tests output (all_gather_perf, reduce_scatter_perf, all_reduce_perf, alltoall_perf) read as
// it is printed, for `shardsim calibrate`:
//
//   # nThread 1 nGpus 8 minBytes 134217728 maxBytes 4294967296 step: 2(factor) ...
//   #  Rank  0 Group  0 Pid 295203 on    node005 device  0 [0x18] NVIDIA H100 80GB HBM3
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//      134217728      33554432     float     sum      -1    613.3  218.85  382.99      0    614.3  218.48  382.34      0
//
// A row is size (bytes, the total S as nccl-tests' PERFORMANCE.md defines it), count, type,
// optional redop and root, then time (us), algbw, busbw (GB/s) and #wrong, out of place and
// in place. A "0: " prefix (srun's --label) is dropped; other lines (NCCL INFO, warnings) are
// skipped. Each row is checked: algbw must be S / time, and busbw / algbw nccl-tests' factor for
// the collective and rank count (2(n-1)/n for all-reduce, (n-1)/n otherwise).
//
// What the log does not say comes from the caller: the collective (else from the log's command
// line or its file name), the rank count and the node count where the log has no "#  Rank ... on
// HOST" header lines (the rank count then also from busbw / algbw when that leaves one answer).
// Where it has them they win, with a note, so that one --nodes can serve a headerless log beside
// headered ones.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "validate/trace.hpp"

namespace shardsim::validate {

struct NcclTestsRow {
  double bytes = 0;      // S
  double time_oop = 0;   // seconds, out of place
  double time_ip = 0;    // seconds, in place (0 when the log has no in-place columns)
  double busbw_oop = 0;  // bytes/s, as printed
  int line = 0;          // in the file
  int column = 0;        // of the row's first word
};

struct NcclTestsLog {
  std::string file;
  ActivityClass collective = ActivityClass::all_reduce;
  std::string collective_from;  // how it was told: "--collective", "the command line in the log", "the file name"
  int ranks = 0;
  std::string ranks_from;  // "the log's header", "--ranks", "busbw / algbw"
  int nodes = 0;
  std::string nodes_from;  // "the log's header", "--nodes"
  std::string device;      // from the "#  Rank" lines, if any
  std::vector<NcclTestsRow> rows;
  std::vector<std::string> notes;  // flags the header made unnecessary
};

struct NcclTestsHints {
  std::optional<ActivityClass> collective;  // --collective
  std::optional<int> ranks;                 // --ranks
  std::optional<int> nodes;                 // --nodes
};

// True if `text` looks like nccl-tests output (a row of size, count, type, time, algbw, busbw).
[[nodiscard]] bool looks_like_nccl_tests(const std::string& text);

// Throws ConfigError naming file:line for rows that do not add up, and naming the file when a
// fact the log does not give is missing from the hints, or when there are no rows at all.
[[nodiscard]] NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& file, const NcclTestsHints& hints);

}  // namespace shardsim::validate
