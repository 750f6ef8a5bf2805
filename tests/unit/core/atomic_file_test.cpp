// Output sets: files written to temporary names as they are added, renamed together at commit,
// removed when the set is abandoned.
#include "core/atomic_file.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"

using namespace shardsim;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path temp_of(const fs::path& p) {
  return p.string() + ".tmp." + std::to_string(::getpid());
}

fs::path fresh_dir(const char* name) {
  const fs::path d = fs::temp_directory_path() / (std::string(name) + "." + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("an output set writes each file at add and shows them all at commit") {
  const fs::path d = fresh_dir("shardsim_outputset");
  { std::ofstream(d / "a.txt") << "old a"; }
  OutputSet set;
  set.add(d / "a.txt", "new a");
  set.add(d / "b.txt", "new b");
  // Written to their temporary names already; the final names still hold what was there.
  CHECK(read(temp_of(d / "a.txt")) == "new a");
  CHECK(read(d / "a.txt") == "old a");
  CHECK_FALSE(fs::exists(d / "b.txt"));
  set.commit();
  CHECK(read(d / "a.txt") == "new a");
  CHECK(read(d / "b.txt") == "new b");
  CHECK_FALSE(fs::exists(temp_of(d / "a.txt")));
  CHECK_FALSE(fs::exists(temp_of(d / "b.txt")));
  fs::remove_all(d);
}

TEST_CASE("an output set that fails or is abandoned leaves no temporary file and the old files whole") {
  const fs::path d = fresh_dir("shardsim_outputset_fail");
  { std::ofstream(d / "a.txt") << "old a"; }
  {
    OutputSet set;
    set.add(d / "a.txt", "new a");
    CHECK(fs::exists(temp_of(d / "a.txt")));
    // The second file's directory does not exist: add throws, naming it.
    CHECK_THROWS_WITH_AS(set.add(d / "missing" / "b.txt", "b"), doctest::Contains("missing/b.txt: cannot write"), RuntimeError);
  }  // abandoned without commit
  CHECK_FALSE(fs::exists(temp_of(d / "a.txt")));
  CHECK(read(d / "a.txt") == "old a");
  // A directory where a file should go is refused at add.
  fs::create_directories(d / "c.txt");
  {
    OutputSet set;
    CHECK_THROWS_WITH_AS(set.add(d / "c.txt", "c"), doctest::Contains("is a directory"), RuntimeError);
  }
  fs::remove_all(d);
}

TEST_CASE("a file written piece by piece appears whole, and a producer that fails leaves the old one") {
  const fs::path d = fresh_dir("shardsim_outputset_pieces");
  write_file_atomic(d / "p.txt", [](const TextWriter& write) {
    write("one ");
    write("two");
  });
  CHECK(read(d / "p.txt") == "one two");
  {
    OutputSet set;
    set.add_written(d / "q.txt", [](const TextWriter& write) { write("q"); });
    CHECK(read(temp_of(d / "q.txt")) == "q");
    // A producer that throws halfway: its temporary file goes, and so do the set's others.
    CHECK_THROWS_AS(set.add_written(d / "p.txt",
                                    [](const TextWriter& write) {
                                      write("half");
                                      throw RuntimeError("the producer failed");
                                    }),
                    RuntimeError);
    CHECK_FALSE(fs::exists(temp_of(d / "p.txt")));
  }
  CHECK_FALSE(fs::exists(temp_of(d / "q.txt")));
  CHECK_FALSE(fs::exists(d / "q.txt"));
  CHECK(read(d / "p.txt") == "one two");
  fs::remove_all(d);
}
