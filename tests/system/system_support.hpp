// Helpers for the system tests: run the shardsim binary, and check that an output file is
// complete (a file cut short by an interrupted write fails these checks).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "process_support.hpp"
#include "test_support.hpp"

namespace shardsim::test {

inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("shardsim-system-" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// shardsim ARGS..., from the source directory (scenario paths as in the README), at most `timeout`.
inline ProcessResult run_shardsim(const std::vector<std::string>& args, const std::filesystem::path& scratch, double timeout_s = 300) {
  std::vector<std::string> argv{shardsim_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, source_dir(), scratch / "io", std::chrono::duration<double>(timeout_s));
}

inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Complete: JSON that parses; a CSV whose every line ends in a newline and has the header's
// number of fields; an SVG document that is closed.
inline bool complete_output(const std::filesystem::path& file) {
  const std::string text = read_all(file);
  const std::string ext = file.extension().string();
  if (ext == ".json") return !text.empty() && nlohmann::json::accept(text);
  if (ext == ".csv") {
    if (text.empty() || text.back() != '\n') return false;
    std::size_t fields = std::string::npos;
    std::size_t start = 0;
    while (start < text.size()) {
      const std::size_t end = text.find('\n', start);
      const auto commas = static_cast<std::size_t>(
          std::count(text.begin() + static_cast<std::ptrdiff_t>(start), text.begin() + static_cast<std::ptrdiff_t>(end), ','));
      if (fields == std::string::npos) fields = commas;
      if (commas != fields) return false;
      start = end + 1;
    }
    return true;
  }
  if (ext == ".svg") {
    std::string t = text;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t.rfind("<svg", 0) == 0 && ends_with(t, "</svg>");
  }
  return false;
}

inline std::vector<std::filesystem::path> temp_files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path());
  }
  return out;
}

}  // namespace shardsim::test
