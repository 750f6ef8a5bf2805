#include "cpu/mpi_comm.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/error.hpp"

namespace shardsim::replay {
namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw RuntimeError(fmt::format("MPI {} failed: {}", what, std::string(text, static_cast<std::size_t>(len))));
}

// Buffer offsets for the microbenchmarks' shifted buffers.
constexpr std::size_t kSlotShift = 4096;
constexpr int kSlots = 4;

// A blocking MPI call spins a core until its peers arrive; on a machine with few cores that
// steals the CPU from the compute stream's kernels (a GPU's copy engines and SMs do not share
// this way). So: test the request, tightly for a short while (small messages finish at once),
// then with short sleeps that leave the core to the kernels. Each test also drives MPI's progress.
void wait(MPI_Request& req) {
  int done = 0;
  for (int spin = 0; spin < 200 && done == 0; ++spin) check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "test");
  while (done == 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "test");
  }
}

}  // namespace

struct MpiComm::Comm {
  MPI_Comm comm = MPI_COMM_NULL;
  int size = 1;
  std::vector<float> send;
  std::vector<float> recv;
  void reserve(std::size_t floats);  // send and receive buffers of at least `floats`
};

MpiComm::MpiComm() {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "init");
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    throw RuntimeError("this MPI does not support MPI_THREAD_MULTIPLE; the CPU backend runs each stream in its own thread");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_);
}

MpiComm::~MpiComm() {
  for (auto& [id, c] : comms_) {
    if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
  }
  MPI_Finalize();
}

bool MpiComm::launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_RANK") != nullptr || std::getenv("PMIX_RANK") != nullptr || std::getenv("PMI_RANK") != nullptr;
}

int MpiComm::split(int color, int key) {
  auto c = std::make_unique<Comm>();
  check(MPI_Comm_split(MPI_COMM_WORLD, color < 0 ? MPI_UNDEFINED : color, key, &c->comm), "communicator split");
  if (c->comm != MPI_COMM_NULL) {
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    MPI_Comm_size(c->comm, &c->size);
  }
  std::lock_guard lock(mutex_);
  const auto id = static_cast<int>(comms_.size());
  comms_[id] = std::move(c);
  return id;
}

MpiComm::Comm& MpiComm::at(int comm) {
  std::lock_guard lock(mutex_);
  return *comms_.at(comm);
}

void MpiComm::Comm::reserve(std::size_t floats) {
  if (send.size() < floats) send.assign(floats, 1.0F);
  if (recv.size() < floats) recv.assign(floats, 0.0F);
}

void MpiComm::run(int comm, graph::OpKind kind, std::size_t bytes, int slot) {
  Comm* c = &at(comm);
  const auto n = static_cast<std::size_t>(c->size);
  // Floats per rank; at least one.
  const std::size_t per_rank = std::max<std::size_t>(1, bytes / sizeof(float) / n);
  const std::size_t offset = static_cast<std::size_t>(slot % kSlots) * kSlotShift / sizeof(float);
  c->reserve(per_rank * n + offset);
  float* send = c->send.data() + offset;
  float* recv = c->recv.data() + offset;
  const int count = static_cast<int>(std::min<std::size_t>(per_rank, 1U << 30U));
  MPI_Request req = MPI_REQUEST_NULL;
  switch (kind) {
    case graph::OpKind::all_gather:
      check(MPI_Iallgather(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, c->comm, &req), "all-gather");
      break;
    case graph::OpKind::reduce_scatter:
      check(MPI_Ireduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, c->comm, &req), "reduce-scatter");
      break;
    case graph::OpKind::send:  // the first member's whole buffer to the second
      check(MPI_Ibcast(send, static_cast<int>(std::min<std::size_t>(per_rank * n, 1U << 30U)), MPI_FLOAT, 0, c->comm, &req), "send");
      break;
    default:
      check(MPI_Iallreduce(send, recv, static_cast<int>(std::min<std::size_t>(per_rank * n, 1U << 30U)), MPI_FLOAT, MPI_SUM, c->comm, &req),
            "all-reduce");
  }
  wait(req);
}

void MpiComm::shift(int comm, std::size_t bytes, int shift) {
  const std::size_t count = std::max<std::size_t>(1, bytes / sizeof(float));
  Comm* c = &at(comm);
  c->reserve(count);
  int me = 0;
  MPI_Comm_rank(c->comm, &me);
  const int n = c->size;
  const int n_floats = static_cast<int>(std::min<std::size_t>(count, 1U << 30U));
  std::array<MPI_Request, 2> req{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  check(MPI_Irecv(c->recv.data(), n_floats, MPI_FLOAT, ((me - shift) % n + n) % n, 0, c->comm, &req[0]), "receive");
  check(MPI_Isend(c->send.data(), n_floats, MPI_FLOAT, (me + shift) % n, 0, c->comm, &req[1]), "send");
  wait(req[0]);
  wait(req[1]);
}

std::vector<double> MpiComm::all_gather(std::span<const double> values) {
  std::vector<double> out(values.size() * static_cast<std::size_t>(world_));
  check(MPI_Allgather(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, out.data(), static_cast<int>(values.size()), MPI_DOUBLE,
                      MPI_COMM_WORLD),
        "gather of the timelines");
  return out;
}

void MpiComm::abort() noexcept {
  MPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace shardsim::replay
