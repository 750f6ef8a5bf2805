#include "sweep/result_store.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/atomic_file.hpp"

namespace shardsim::sweep {
namespace {

constexpr const char* kJsonl = "results.jsonl";
constexpr const char* kCsv = "results.csv";

void append_line(int fd, const std::string& line, const std::filesystem::path& file) {
  std::string_view rest = line;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw RuntimeError(fmt::format("{}: write failed: {}", file.string(), std::strerror(errno)));
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

void sync_file(int fd, const std::filesystem::path& file) {
  if (::fdatasync(fd) != 0 && errno != EINVAL) {  // EINVAL: a file system without sync (a pipe, /dev/null)
    throw RuntimeError(fmt::format("{}: cannot flush to disk: {}", file.string(), std::strerror(errno)));
  }
}

std::string jsonl_text(const std::vector<PointResult>& rows) {
  std::string out;
  for (const auto& r : rows) out += jsonl_line(r) + "\n";
  return out;
}

std::string csv_text(const std::vector<PointResult>& rows, const std::vector<std::string>& keys) {
  std::string out = csv_header(keys);
  for (const auto& r : rows) out += csv_row(r, keys);
  return out;
}

}  // namespace

std::string fnv1a64(std::string_view data) {
  std::uint64_t h = 14695981039346656037ULL;  // FNV offset basis
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;  // FNV prime
  }
  return fmt::format("{:016x}", h);
}

ResultStream::ResultStream(std::filesystem::path dir, std::vector<std::string> keys, const std::vector<PointResult>& rows)
    : dir_(std::move(dir)), keys_(std::move(keys)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw RuntimeError(fmt::format("{}: cannot create directory: {}", dir_.string(), ec.message()));
  const auto lock = dir_ / ".results.lock";
  lock_fd_ = ::open(lock.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) throw RuntimeError(fmt::format("{}: cannot create: {}", lock.string(), std::strerror(errno)));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw RuntimeError(fmt::format("{}: another sweep is writing these results; wait for it or use another --out", dir_.string()));
  }
  rewrite(rows);
}

ResultStream::~ResultStream() {
  try {
    sync();
  } catch (const RuntimeError&) {
    // Destructors must not throw; the lines are written, only not known to be on disk.
  }
  close_files();
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

void ResultStream::close_files() {
  if (jsonl_fd_ >= 0) ::close(jsonl_fd_);
  if (csv_fd_ >= 0) ::close(csv_fd_);
  jsonl_fd_ = csv_fd_ = -1;
}

void ResultStream::open_for_append() {
  const auto open_append = [](const std::filesystem::path& p) {
    const int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) throw RuntimeError(fmt::format("{}: cannot open for appending: {}", p.string(), std::strerror(errno)));
    return fd;
  };
  jsonl_fd_ = open_append(dir_ / kJsonl);
  csv_fd_ = open_append(dir_ / kCsv);
  synced_ = std::chrono::steady_clock::now();
}

void ResultStream::append(const PointResult& r) {
  append_line(jsonl_fd_, jsonl_line(r) + "\n", dir_ / kJsonl);
  append_line(csv_fd_, csv_row(r, keys_), dir_ / kCsv);
  dirty_ = true;
  if (std::chrono::steady_clock::now() - synced_ >= kSyncInterval) sync();
}

void ResultStream::sync() {
  if (!dirty_ || jsonl_fd_ < 0) return;
  sync_file(jsonl_fd_, dir_ / kJsonl);
  sync_file(csv_fd_, dir_ / kCsv);
  synced_ = std::chrono::steady_clock::now();
  dirty_ = false;
}

void ResultStream::rewrite(const std::vector<PointResult>& rows) {
  sync();
  close_files();  // the appending descriptors would keep writing to the replaced files
  write_file_atomic(dir_ / kJsonl, jsonl_text(rows));
  write_file_atomic(dir_ / kCsv, csv_text(rows, keys_));
  open_for_append();
}

Finished read_finished(const std::filesystem::path& root, const std::filesystem::path& own_dir) {
  Finished out;
  std::vector<std::filesystem::path> dirs{root};
  std::error_code ec;
  if (std::filesystem::is_directory(root, ec)) {
    std::vector<std::filesystem::path> shards;
    for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
      if (e.is_directory() && e.path().filename().string().rfind("shard-", 0) == 0) shards.push_back(e.path());
    }
    std::sort(shards.begin(), shards.end());  // directory order is arbitrary; results must not be
    dirs.insert(dirs.end(), shards.begin(), shards.end());
  }
  for (const auto& d : dirs) {
    auto read = read_jsonl(d / kJsonl);
    out.damaged += read.damaged + (read.torn_tail ? 1 : 0);
    auto& into = std::filesystem::weakly_canonical(d) == std::filesystem::weakly_canonical(own_dir) ? out.own : out.others;
    into.insert(into.end(), std::make_move_iterator(read.rows.begin()), std::make_move_iterator(read.rows.end()));
  }
  return out;
}

void check_manifest(const std::filesystem::path& root, const nlohmann::json& manifest) {
  const auto file = root / "sweep.json";
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    std::ifstream in(file);
    std::stringstream buf;
    buf << in.rdbuf();
    const auto old = nlohmann::json::parse(buf.str(), nullptr, false);
    std::string differs;
    for (const auto& [k, v] : manifest.items()) {
      if (k == "scenario") continue;  // the same file may be named from another directory
      if (old.is_discarded() || !old.is_object() || !old.contains(k) || old[k] != v) differs += (differs.empty() ? "" : ", ") + k;
    }
    if (differs.empty()) return;
    throw ConfigError(Location{file.string(), 0, 0}, "",
                      fmt::format("this directory holds results of a different sweep ({} differ{}); expected the same scenario "
                                  "file, --set and grid as before, or another --out directory",
                                  differs, differs.find(',') == std::string::npos ? "s" : ""));
  }
  std::filesystem::create_directories(root, ec);
  if (ec) throw RuntimeError(fmt::format("{}: cannot create directory: {}", root.string(), ec.message()));
  write_file_atomic(file, manifest.dump(2) + "\n");
}

}  // namespace shardsim::sweep
