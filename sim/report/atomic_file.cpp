#include "report/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"

namespace shardsim::report {

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw RuntimeError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw RuntimeError(fmt::format("{}: write failed: {}", path.string(), std::strerror(errno)));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw RuntimeError(fmt::format("{}: cannot rename into place: {}", path.string(), ec.message()));
  }
}

}  // namespace shardsim::report
