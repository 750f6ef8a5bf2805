#include "config/topology_library.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <system_error>

namespace shardsim::config {
namespace fs = std::filesystem;

bool is_topology_name(std::string_view value) {
  return !value.empty() && value.find('/') == std::string_view::npos && !value.ends_with(".yaml") && !value.ends_with(".yml") &&
         value != "." && value != "..";
}

std::vector<fs::path> topology_dirs() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("SHARDSIM_TOPOLOGY_PATH")) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      if (colon != 0) candidates.emplace_back(std::string(rest.substr(0, colon)));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "shardsim" / "topologies");
#ifdef SHARDSIM_SOURCE_TOPOLOGIES
  candidates.emplace_back(SHARDSIM_SOURCE_TOPOLOGIES);
#endif
  std::vector<fs::path> out;
  for (const auto& c : candidates) {
    if (fs::is_directory(c, ec) && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::optional<fs::path> find_shipped_topology(std::string_view name) {
  if (!is_topology_name(name)) return std::nullopt;
  std::error_code ec;
  for (const auto& dir : topology_dirs()) {
    const fs::path file = dir / (std::string(name) + ".yaml");
    if (fs::is_regular_file(file, ec)) return file;
  }
  return std::nullopt;
}

std::vector<std::string> shipped_topologies() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& dir : topology_dirs()) {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".yaml") names.insert(e.path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}

}  // namespace shardsim::config
