// Rendezvous, rank launching and the watchdog: what keeps a multi-process replay from hanging
// when a peer never arrives. Each case forks real processes.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "replay/launch.hpp"
#include "replay/rendezvous.hpp"
#include "replay/watchdog.hpp"

using namespace shardsim;
using Clock = std::chrono::steady_clock;

namespace {

std::filesystem::path fresh_dir(const char* name) {
  const auto d = std::filesystem::temp_directory_path() / fmt::format("shardsim-{}-{}", name, ::getpid());
  std::filesystem::remove_all(d);
  return d;
}

// A TCP port nobody listens on right now.
int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

replay::RankEnv env(int rank, int world, int port = 0) {
  replay::RankEnv e;
  e.launcher = replay::Launcher::torchrun;
  e.rank = rank;
  e.world = world;
  e.master_addr = "127.0.0.1";
  e.master_port = port;
  e.run_id = "test";
  return e;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// In each of 3 children, share rank 0's blob; exit 0 when the blob arrived intact.
int share_in_children(const replay::RendezvousSpec& spec, int port) {
  return replay::run_ranks(3, 1.0, [&] {
    const int rank = std::atoi(std::getenv("RANK"));
    const std::vector<char> mine{'i', 'd', '4', '2'};
    const auto got = replay::share_from_rank0(env(rank, 3, port), spec, "nccl-id", rank == 0 ? mine : std::vector<char>{});
    return got == mine ? 0 : 7;
  });
}

}  // namespace

TEST_CASE("rank 0's blob reaches every rank through a file, and over TCP") {
  const auto dir = fresh_dir("rdv-file");
  CHECK(share_in_children({dir, false, 20}, 0) == 0);
  CHECK(share_in_children({dir, true, 20}, free_port()) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a rank 0 that never arrives ends the rendezvous in a clear error within the timeout") {
  const auto start = Clock::now();
  try {
    (void)replay::share_from_rank0(env(1, 2), {fresh_dir("rdv-missing"), false, 0.5}, "nccl-id", {});
    FAIL("expected an error");
  } catch (const RuntimeError& e) {
    CHECK(std::string(e.what()).find("rank 1: rank 0 did not publish") == 0);
    CHECK(std::string(e.what()).find("within 0.5 s: rank 0 never arrived") != std::string::npos);
  }
  try {
    (void)replay::share_from_rank0(env(1, 2, free_port()), {"", true, 0.5}, "nccl-id", {});
    FAIL("expected an error");
  } catch (const RuntimeError& e) {
    CHECK(std::string(e.what()).find("no answer from rank 0 at 127.0.0.1:") != std::string::npos);
  }
  try {  // and rank 0 whose peers never connect
    (void)replay::share_from_rank0(env(0, 3, free_port()), {"", true, 0.5}, "nccl-id", {'x'});
    FAIL("expected an error");
  } catch (const RuntimeError& e) {
    CHECK(std::string(e.what()).find("rank 0: 0 of 2 ranks connected") == 0);
  }
  CHECK(seconds_since(start) < 5);
}

TEST_CASE("when one rank fails, the launcher ends the others and returns its code") {
  const auto start = Clock::now();
  const int code = replay::run_ranks(3, 0.5, [] {
    if (std::string(std::getenv("RANK")) == "1") return 3;
    std::this_thread::sleep_for(std::chrono::seconds(60));  // a peer left waiting
    return 0;
  });
  CHECK(code == 3);
  CHECK(seconds_since(start) < 10);
  CHECK(replay::run_ranks(2, 0.5, [] { return 0; }) == 0);
}

TEST_CASE("the watchdog reports what was awaited when progress stops") {
  std::atomic<bool> fired{false};
  std::string message;
  {
    replay::Watchdog w(0.2, [&](const std::string& m) {
      message = m;
      fired = true;
    });
    w.kick("op 7 \"AG layers.1\"");
    const auto start = Clock::now();
    while (!fired && seconds_since(start) < 5) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(fired);
  CHECK(message == "no progress for 0.2 s while waiting for op 7 \"AG layers.1\": a peer never arrived, or a collective or kernel hangs");
}

TEST_CASE("a watchdog that is kicked does not fire") {
  std::atomic<bool> fired{false};
  replay::Watchdog w(0.3, [&](const std::string&) { fired = true; });
  for (int i = 0; i < 10; ++i) {
    w.kick("step");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK_FALSE(fired);
}
