// Output files are written to a temporary name in the same directory and renamed into place, so
// an interrupted run never leaves a half-written file under the final name.
#pragma once

#include <filesystem>
#include <string_view>

namespace shardsim::report {

// Throws RuntimeError naming the path if it cannot be written.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

}  // namespace shardsim::report
