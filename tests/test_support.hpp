// Helpers shared by the unit tests: paths into the source tree and temporary files.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace shardsim::test {

inline std::filesystem::path source_dir() {
  return SHARDSIM_SOURCE_DIR;
}
inline std::filesystem::path shardsim_binary() {
  return SHARDSIM_BINARY;
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

}  // namespace shardsim::test
