// Output files. A file under its final name is always complete: each is written to a temporary
// name in the same directory (FILE.tmp.PID) and renamed into place, so an interrupted run
// leaves the previous file or the new one, never half of one. Files that belong together (the
// outputs of one `run --out DIR`) are renamed together with signals held, so they appear all at
// once or not at all. An output path that is a symbolic link is written through (the file it
// names is replaced); a device or FIFO (/dev/null, /dev/stdout, a pipe) is written to directly;
// a directory is an error.
//
//   install_interrupt_cleanup();                                   // once, in main()
//   check_outputs({{"--trace", trace}}, inputs);                   // before the run: never over an input
//   write_file_atomic("out/trace.json", text);
//   OutputSet set;  set.add("out/summary.json", a);  set.add("out/memory.csv", b);  set.commit();
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardsim {

// Receives a text in pieces, in order (a file too large to make in memory first).
using TextWriter = std::function<void(std::string_view)>;

// Throws RuntimeError naming the path if it cannot be written; the temporary file is removed.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);
// The same for a text `produce` hands its writer piece by piece, written as it comes.
void write_file_atomic(const std::filesystem::path& path, const std::function<void(const TextWriter&)>& produce);

// Files that appear together or not at all: add() writes each to its temporary name at once (so
// that a large output is written and freed before the next is made), commit() renames them all
// while SIGINT, SIGTERM, SIGHUP and SIGPIPE are held back. A failed write (disk full) removes the
// temporary files and leaves whatever was there before untouched, as does a set destroyed without
// commit(). A device or FIFO is written to at commit().
class OutputSet {
 public:
  OutputSet();
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  void add(const std::filesystem::path& path, std::string content);
  // The file's text as `produce` hands it to its writer, piece by piece, into the temporary file.
  void add_written(const std::filesystem::path& path, const std::function<void(const TextWriter&)>& produce);
  void commit();

 private:
  struct Pending;
  std::vector<std::unique_ptr<Pending>> files_;
};

// What a command reads, named for messages ("the scenario", "the topology", "a trace").
struct InputFile {
  std::filesystem::path path;
  std::string role;
};
// An output a command was asked to write: the option that named it and the path.
struct OutputFile {
  std::string option;  // "--trace", "--out DIR: summary.json"
  std::filesystem::path path;
};

// Throws UsageError when an output is one of the inputs (the same file, however it is spelt, by
// symbolic or hard link), is a directory, or is a symbolic link that leads nowhere (dangling, or
// a loop). Call it before the work, so that a run is refused before it starts.
void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs);

// Installs handlers for SIGINT, SIGTERM, SIGHUP, SIGPIPE and SIGXFSZ that remove the temporary
// files of writes in progress and then end the process by the same signal (so the exit status
// still says "killed by SIGINT"). SIGKILL cannot be caught: it may leave a FILE.tmp.PID behind,
// but never a partial FILE.
void install_interrupt_cleanup();

}  // namespace shardsim
