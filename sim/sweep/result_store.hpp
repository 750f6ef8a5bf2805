// The results files of a sweep directory (see driver.hpp for the layout): streaming appends
// that survive a kill, the finished points an earlier run left, and the manifest that keeps two
// different sweeps from mixing in one directory.
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sweep/result.hpp"

namespace shardsim::sweep {

// results.jsonl and results.csv in one directory, appended one whole line per point with a
// single write(), JSON first (the record resume trusts), CSV second. A written line survives the
// sweep being killed; fdatasync() runs at most once per kSyncInterval (and at the end), so a
// machine crash loses at most that much, and a sweep of fast points is not held up by the disk
// (one sync per point took longer than simulating a 64-GPU point). A line cut short by a crash is
// ignored on resume. Holds an exclusive lock (.results.lock) so that two runs cannot write the
// same files.
class ResultStream {
 public:
  // Replaces both files by `rows` (which drops a line an earlier run left half-written), then
  // opens them for appending. Throws RuntimeError when the directory cannot be written or is
  // locked by another running sweep.
  ResultStream(std::filesystem::path dir, std::vector<std::string> keys, const std::vector<PointResult>& rows);
  ~ResultStream();
  ResultStream(const ResultStream&) = delete;
  ResultStream& operator=(const ResultStream&) = delete;

  static constexpr std::chrono::milliseconds kSyncInterval{1000};

  void append(const PointResult& r);
  // Replaces both files by `rows`, in that order, atomically (temp file + rename).
  void rewrite(const std::vector<PointResult>& rows);

 private:
  void open_for_append();
  void close_files();
  void sync();

  std::filesystem::path dir_;
  std::vector<std::string> keys_;
  int lock_fd_ = -1;
  int jsonl_fd_ = -1;
  int csv_fd_ = -1;
  std::chrono::steady_clock::time_point synced_;
  bool dirty_ = false;
};

struct Finished {
  std::vector<PointResult> own;     // from the directory's own results.jsonl, in file order
  std::vector<PointResult> others;  // from the other results.jsonl under the sweep's root
  std::size_t damaged = 0;          // lines skipped as torn or unreadable
};

// Reads `own_dir`/results.jsonl and every results.jsonl in `root` and root/shard-*/.
[[nodiscard]] Finished read_finished(const std::filesystem::path& root, const std::filesystem::path& own_dir);

// Writes root/sweep.json when absent; when present, requires it to describe the same sweep.
// Throws ConfigError naming the file and what differs.
void check_manifest(const std::filesystem::path& root, const nlohmann::json& manifest);

// 64-bit FNV-1a, printed as 16 hex digits: a stable digest of files and point lists.
[[nodiscard]] std::string fnv1a64(std::string_view data);

}  // namespace shardsim::sweep
