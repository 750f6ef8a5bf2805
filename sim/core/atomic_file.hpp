// Output files are written to a temporary name in the same directory (FILE.tmp.PID) and renamed
// into place, so that a file under its final name is always complete: an
// interrupted run leaves either the previous file or the new one, never half of one.
//
//   install_interrupt_cleanup();              // once, in main()
//   write_file_atomic("out/summary.json", text);
#pragma once

#include <filesystem>
#include <string_view>

namespace shardsim {

// Throws RuntimeError naming the path if it cannot be written; the temporary file is removed.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGPIPE that remove the temporary file of a
// write in progress and then end the process by the same signal (so the exit status still says
// "killed by SIGINT"). SIGKILL cannot be caught: it may leave a FILE.tmp.PID behind, but never a
// partial FILE.
void install_interrupt_cleanup();

}  // namespace shardsim
