// Helpers shared by the unit tests: paths into the source tree and temporary files.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace shardsim::test {

inline std::filesystem::path source_dir() {
  return SHARDSIM_SOURCE_DIR;
}
inline std::filesystem::path shardsim_binary() {
  return SHARDSIM_BINARY;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream text;  // not istreambuf_iterator: GCC 12 warns of a null dereference in it
  text << in.rdbuf();
  return text.str();
}

// A file that lives for the duration of a test case.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& content) {
    dir_ = std::filesystem::temp_directory_path() / ("shardsim-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = dir_ / name;
    std::ofstream(path_) << content;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::string str() const { return path_.string(); }

 private:
  std::filesystem::path dir_;
  std::filesystem::path path_;
};

// Runs fn() in a child process and returns its result: SimGrid allows one engine per process,
// so a test that compares two simulations runs each in a child.
template <class F>
auto in_child(F fn) -> decltype(fn()) {
  using T = decltype(fn());
  static_assert(std::is_trivially_copyable_v<T>);
  std::array<int, 2> fds{};
  if (pipe(fds.data()) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const T value = fn();
    const bool ok = write(fds[1], &value, sizeof value) == static_cast<ssize_t>(sizeof value);
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  T value{};
  const bool ok = read(fds[0], &value, sizeof value) == static_cast<ssize_t>(sizeof value);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("child simulation failed");
  return value;
}

}  // namespace shardsim::test
