// The MPI sweep of distributed.hpp. Messages (all on MPI_COMM_WORLD):
//   rank r -> 0  kHello   int        how many workers rank r runs at once
//   0 -> rank r  kAssign  long long  a point index to run, or -1: stop
//   rank r -> 0  kResult  chars      the point's results.jsonl line
// Waiting loops sleep in poll() between MPI_Iprobe calls: OpenMPI's blocking receives spin and
// would take a core from the workers.
#include <dlfcn.h>
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/error.hpp"
#include "sweep/distributed.hpp"
#include "sweep/fork_server.hpp"

namespace shardsim::sweep {
namespace {

constexpr int kHello = 1;
constexpr int kAssign = 2;
constexpr int kResult = 3;
constexpr auto kTick = std::chrono::milliseconds(2);

// libsimgrid.so exports an MPI emulator's MPI_Init & co. (SMPI); if it is loaded before the MPI
// library, MPI calls land there and abort. sim/CMakeLists.txt links libmpi.so first; say so
// plainly if a build got that wrong rather than crash inside SimGrid.
void require_real_mpi() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&MPI_Init), &info) != 0 && info.dli_fname != nullptr &&
      std::string_view(info.dli_fname).find("simgrid") != std::string_view::npos) {
    throw RuntimeError(
        fmt::format("MPI_Init resolves to {} (SimGrid's MPI emulator), not to the MPI library: the shardsim "
                    "binary must be linked with libmpi before libsimgrid (see sim/CMakeLists.txt)",
                    info.dli_fname));
  }
}

class Session {
 public:
  Session() {
    require_real_mpi();
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~Session() { MPI_Finalize(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

// Receives a kResult message if one is waiting.
std::optional<std::pair<int, std::string>> try_receive_result() {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kResult, MPI_COMM_WORLD, &flag, &status);
  if (flag == 0) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string line(static_cast<std::size_t>(count), '\0');
  MPI_Recv(line.data(), count, MPI_CHAR, status.MPI_SOURCE, kResult, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return std::make_pair(status.MPI_SOURCE, std::move(line));
}

// Rank 0's executor: its own ForkServer is rank 0's share, the other ranks the rest.
class Coordinator final : public Executor {
 public:
  Coordinator(int ranks, ForkServer& local)
      : local_(local), jobs_(static_cast<std::size_t>(ranks)), running_(jobs_.size()), ran_(jobs_.size()), stopped_(jobs_.size()) {
    jobs_[0] = local.capacity();
    for (int r = 1; r < ranks; ++r) MPI_Recv(&jobs_[static_cast<std::size_t>(r)], 1, MPI_INT, r, kHello, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  ~Coordinator() override { stop_all(); }

  void stop_all() {
    for (std::size_t r = 1; r < jobs_.size(); ++r) {
      if (stopped_[r]) continue;
      long long stop = -1;
      MPI_Send(&stop, 1, MPI_LONG_LONG, static_cast<int>(r), kAssign, MPI_COMM_WORLD);
      stopped_[r] = true;
    }
  }

  [[nodiscard]] int capacity() const override {
    int n = 0;
    for (int j : jobs_) n += j;
    return n;
  }

  void submit(const Point& p) override {
    // The rank with the most free workers; rank 0 on ties, as it needs no message.
    std::size_t best = 0;
    for (std::size_t r = 1; r < jobs_.size(); ++r) {
      if (jobs_[r] - running_[r] > jobs_[best] - running_[best]) best = r;
    }
    if (best == 0) {
      local_.submit(p);
    } else {
      auto index = static_cast<long long>(p.index);
      MPI_Send(&index, 1, MPI_LONG_LONG, static_cast<int>(best), kAssign, MPI_COMM_WORLD);
    }
    ++running_[best];
  }

  [[nodiscard]] std::vector<PointResult> wait() override {
    while (true) {
      std::vector<PointResult> done;
      const bool remote = std::any_of(running_.begin() + 1, running_.end(), [](int n) { return n > 0; });
      if (running_[0] > 0) {
        for (auto& r : local_.wait_for(remote ? kTick : std::chrono::milliseconds(-1))) {
          --running_[0];
          ++ran_[0];
          done.push_back(std::move(r));
        }
      } else {
        std::this_thread::sleep_for(kTick);
      }
      while (auto msg = try_receive_result()) {
        auto r = parse_jsonl_line(msg->second);
        if (!r) throw RuntimeError("an MPI rank sent an unreadable sweep result");
        const auto from = static_cast<std::size_t>(msg->first);
        --running_[from];
        ++ran_[from];
        done.push_back(std::move(*r));
      }
      if (!done.empty()) return done;
    }
  }

  [[nodiscard]] std::vector<std::size_t> ran() const { return ran_; }

 private:
  ForkServer& local_;
  std::vector<int> jobs_;
  std::vector<int> running_;
  std::vector<std::size_t> ran_;
  std::vector<bool> stopped_;
};

// Ranks other than 0: run what rank 0 assigns until it says stop.
void serve(ForkServer& local, const std::vector<Point>& points) {
  int jobs = local.capacity();
  MPI_Send(&jobs, 1, MPI_INT, 0, kHello, MPI_COMM_WORLD);
  while (true) {
    int flag = 0;
    MPI_Iprobe(0, kAssign, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (flag != 0) {
      long long index = 0;
      MPI_Recv(&index, 1, MPI_LONG_LONG, 0, kAssign, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (index < 0) return;  // points still running were abandoned by rank 0: the server kills them
      local.submit(points.at(static_cast<std::size_t>(index)));
      continue;
    }
    if (local.running() == 0) {
      std::this_thread::sleep_for(kTick);
      continue;
    }
    for (const auto& r : local.wait_for(kTick)) {
      std::string line = jsonl_line(r);
      MPI_Send(line.data(), static_cast<int>(line.size()), MPI_CHAR, 0, kResult, MPI_COMM_WORLD);
    }
  }
}

}  // namespace

bool mpi_built() {
  return true;
}

std::optional<DistributedOutcome> run_sweep_mpi(const SweepSpec& spec, int jobs, const PointFunction& fn, SweepObserver* observer) {
  ForkServer server(spec.points, jobs, fn);  // before MPI_Init: see fork_server.hpp
  Session mpi;
  if (mpi.rank() != 0) {
    serve(server, spec.points);
    return std::nullopt;
  }
  Coordinator coordinator(mpi.size(), server);
  DistributedOutcome out{run_sweep(spec, coordinator, observer), {}};
  coordinator.stop_all();
  out.points_per_rank = coordinator.ran();
  return out;
}

}  // namespace shardsim::sweep
