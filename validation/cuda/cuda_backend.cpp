#include "cuda/cuda_backend.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "cuda/device_kernels.hpp"

namespace shardsim::replay {
namespace {

// Copies larger than this are issued in chunks: a 16 GB optimizer sweep needs no 16 GB buffer.
constexpr std::size_t kMaxCopyBuffer = std::size_t{1} << 30U;
// Shifted buffers (microbenchmarks): slot i starts i x 1 MiB into a slightly larger buffer.
constexpr std::size_t kSlotShift = std::size_t{1} << 20U;
constexpr int kSlots = 4;

void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw RuntimeError(fmt::format("{}: CUDA error {}: {}", what, cudaGetErrorName(e), cudaGetErrorString(e)));
}

void check(cublasStatus_t s, const std::string& what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw RuntimeError(fmt::format("{}: cuBLAS error {}", what, cublasGetStatusString(s)));
}

void check(ncclResult_t r, ncclComm_t comm, const std::string& what) {
  if (r == ncclSuccess) return;
  const char* last = ncclGetLastError(comm);
  throw RuntimeError(fmt::format("{}: NCCL error {}{}{}", what, ncclGetErrorString(r), last != nullptr && *last != 0 ? ": " : "",
                                 last != nullptr ? last : ""));
}

// A device allocation freed on every path; out of memory names the sizes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // True when it (re)allocated: the contents are zeros then.
  bool ensure(std::size_t bytes, int rank, const char* what) {
    if (bytes <= size_) return false;
    if (ptr_ != nullptr) check(cudaFree(ptr_), "cudaFree");
    ptr_ = nullptr;
    size_ = 0;
    const cudaError_t e = cudaMalloc(&ptr_, bytes);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear the sticky-free error state
      std::size_t free = 0;
      std::size_t total = 0;
      cudaMemGetInfo(&free, &total);
      throw RuntimeError(fmt::format("rank {}: out of GPU memory: {:.2f} GiB for {} with {:.2f} GiB free of {:.2f} GiB", rank,
                                     static_cast<double>(bytes) / (1U << 30U), what, static_cast<double>(free) / (1U << 30U),
                                     static_cast<double>(total) / (1U << 30U)));
    }
    check(e, fmt::format("rank {}: cudaMalloc of {} bytes for {}", rank, bytes, what));
    check(cudaMemset(ptr_, 0, bytes), "cudaMemset");
    size_ = bytes;
    return true;
  }
  [[nodiscard]] char* get() const { return static_cast<char*>(ptr_); }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

// cuBLASLt's descriptors and chosen kernel for one float8 GEMM shape, made once per stream.
struct Fp8Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  Fp8Plan() = default;
  ~Fp8Plan() {
    for (cublasLtMatrixLayout_t l : {a, b, c}) {
      if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
    }
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
  Fp8Plan(const Fp8Plan&) = delete;
  Fp8Plan& operator=(const Fp8Plan&) = delete;
};

struct Stream {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  DeviceBuffer a, b, c, src, dst, send, recv, workspace;
  DeviceBuffer a8, b8;  // float8 GEMM operands
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, validate::GemmPrecision>, std::unique_ptr<Fp8Plan>> fp8_plans;
};

// cuBLASLt's workspace for float8 GEMMs (what PyTorch gives _scaled_mm on Hopper: 32 MiB).
constexpr std::size_t kLtWorkspace = std::size_t{32} << 20U;

// Fills a GEMM operand buffer just (re)allocated with random values (device_kernels.hpp says why:
// a GEMM of zeros runs faster at a power limit), and waits for the fill: the streams that read it
// do not order with the default stream.
void randomize(DeviceBuffer& buffer, bool reallocated, bool fp8, std::uint32_t seed) {
  if (!reallocated) return;
  const cudaError_t e =
      fp8 ? fill_random_e4m3(buffer.get(), buffer.size(), seed, nullptr) : fill_random_bf16(buffer.get(), buffer.size() / 2, seed, nullptr);
  check(e, "filling GEMM operands");
  check(cudaDeviceSynchronize(), "filling GEMM operands");
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaOptions& o) : env_(o.env) {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (env_.local_rank >= count) {
      throw RuntimeError(fmt::format("rank {}: LOCAL_RANK {} but this node has {} visible GPU(s)", env_.rank, env_.local_rank, count));
    }
    check(cudaSetDevice(env_.local_rank), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, env_.local_rank), "cudaGetDeviceProperties");
    device_ = prop.name;
    fp8_ = prop.major > 8 || (prop.major == 8 && prop.minor >= 9);  // float8 tensor cores: Ada, Hopper and later
    compute_capability_ = fmt::format("{}.{}", prop.major, prop.minor);
    int nccl_version = 0;
    ncclGetVersion(&nccl_version);
    nccl_version_ = nccl_version;
    // The world communicator: rank 0's unique id, handed out through the rendezvous.
    ncclUniqueId id{};
    std::vector<char> blob(sizeof id);
    if (env_.rank == 0) {
      check(ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId");
      std::memcpy(blob.data(), &id, sizeof id);
    }
    blob = share_from_rank0(env_, o.rendezvous, "nccl-id", blob);
    if (blob.size() != sizeof id)
      throw RuntimeError(fmt::format("rank {}: the rendezvous gave {} bytes, not an NCCL id", env_.rank, blob.size()));
    std::memcpy(&id, blob.data(), sizeof id);
    ncclComm_t world = nullptr;
    check(ncclCommInitRank(&world, env_.world, id, env_.rank), nullptr, fmt::format("rank {}: ncclCommInitRank", env_.rank));
    comms_.push_back(world);
    check(cudaStreamCreateWithFlags(&internal_, cudaStreamNonBlocking), "cudaStreamCreate");
  }

  ~CudaBackend() override {
    if (aborted_.load()) return;  // communicators are gone; the process is on its way out
    cudaDeviceSynchronize();
    for (auto& s : streams_) {
      if (s->blas != nullptr) cublasDestroy(s->blas);
      if (s->stream != nullptr) cudaStreamDestroy(s->stream);
    }
    for (auto& s : streams_) s->fp8_plans.clear();
    if (lt_ != nullptr) cublasLtDestroy(lt_);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    for (ncclComm_t c : comms_) {
      if (c != nullptr) ncclCommDestroy(c);
    }
    if (internal_ != nullptr) cudaStreamDestroy(internal_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  [[nodiscard]] int rank() const override { return env_.rank; }
  [[nodiscard]] int world() const override { return env_.world; }
  [[nodiscard]] std::string name() const override { return "nccl"; }
  [[nodiscard]] std::string device() const override {
    return fmt::format("{}, NCCL {}.{}.{}", device_, nccl_version_ / 10000, nccl_version_ / 100 % 100, nccl_version_ % 100);
  }

  StreamId create_stream(const std::string& /*name*/) override {
    auto s = std::make_unique<Stream>();
    check(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&s->blas), "cublasCreate");
    check(cublasSetStream(s->blas, s->stream), "cublasSetStream");
    streams_.push_back(std::move(s));
    return static_cast<StreamId>(streams_.size() - 1);
  }

  EventId create_event() override {
    cudaEvent_t e = nullptr;
    check(cudaEventCreate(&e), "cudaEventCreate");
    events_.push_back(e);
    return static_cast<EventId>(events_.size() - 1);
  }

  CommId split_communicator(int color, int key) override {
    ncclComm_t c = nullptr;
    // A rank outside every group of the split (color < 0) gets no communicator (nullptr).
    check(ncclCommSplit(comms_.front(), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &c, nullptr), comms_.front(),
          fmt::format("rank {}: ncclCommSplit", env_.rank));
    comms_.push_back(c);
    return static_cast<CommId>(comms_.size() - 1);
  }

  void reserve(StreamId stream, const KernelFootprint& f, double collective_bytes) override {
    Stream& s = *streams_.at(static_cast<std::size_t>(stream));
    constexpr std::size_t kBf16 = 2;
    randomize(s.a, s.a.ensure(static_cast<std::size_t>(f.gemm_a) * kBf16 + 256, env_.rank, "GEMM inputs"), false, 1);
    randomize(s.b, s.b.ensure(static_cast<std::size_t>(f.gemm_b) * kBf16 + 256, env_.rank, "GEMM weights"), false, 2);
    s.c.ensure(static_cast<std::size_t>(f.gemm_c) * kBf16 + 256, env_.rank, "GEMM outputs");
    const auto copy = std::min(kMaxCopyBuffer, static_cast<std::size_t>(f.copy_bytes) + 256);
    s.src.ensure(copy, env_.rank, "copy source");
    s.dst.ensure(copy, env_.rank, "copy destination");
    const auto coll = static_cast<std::size_t>(collective_bytes) + kSlots * kSlotShift;
    s.send.ensure(coll, env_.rank, "collective send buffer");
    s.recv.ensure(coll, env_.rank, "collective receive buffer");
  }

  void enqueue(StreamId stream, const Kernel& kernel) override {
    Stream& s = *streams_.at(static_cast<std::size_t>(stream));
    if (const auto* g = std::get_if<GemmKernel>(&kernel)) {
      if (validate::is_fp8(g->precision)) {
        gemm_fp8(s, *g);
      } else {
        gemm(s, *g);
      }
    } else if (const auto* c = std::get_if<CopyKernel>(&kernel)) {
      auto left = static_cast<std::size_t>(c->bytes / 2);
      while (left > 0) {
        const std::size_t n = std::min(left, s.src.size());
        check(cudaMemcpyAsync(s.dst.get(), s.src.get(), n, cudaMemcpyDeviceToDevice, s.stream), "cudaMemcpyAsync");
        left -= n;
      }
    } else {
      check(launch_empty_kernel(s.stream), "empty kernel launch");
    }
  }

  void enqueue_collective(StreamId stream, CommId comm, graph::OpKind kind, double bytes, int slot) override {
    Stream& s = *streams_.at(static_cast<std::size_t>(stream));
    ncclComm_t c = comms_.at(static_cast<std::size_t>(comm));
    int n = 1;
    check(ncclCommCount(c, &n), c, "ncclCommCount");
    const std::size_t shift = static_cast<std::size_t>(slot % kSlots) * kSlotShift;
    char* send = s.send.get() + shift;
    char* recv = s.recv.get() + shift;
    const auto total = static_cast<std::size_t>(bytes);
    const std::string what = fmt::format("rank {}: {} of {} bytes", env_.rank, graph::to_string(kind), total);
    switch (kind) {
      case graph::OpKind::all_gather:  // bf16 parameters: S / 2 elements gathered, S / 2n from each rank
        check(ncclAllGather(send, recv, std::max<std::size_t>(1, total / 2 / static_cast<std::size_t>(n)), ncclBfloat16, c, s.stream), c,
              what);
        break;
      case graph::OpKind::reduce_scatter:  // fp32 gradients (mixed precision's reduce dtype)
        check(ncclReduceScatter(send, recv, std::max<std::size_t>(1, total / 4 / static_cast<std::size_t>(n)), ncclFloat32, ncclSum, c,
                                s.stream),
              c, what);
        break;
      case graph::OpKind::send:  // a pipeline's bf16 activations or gradients, from member 0 to member 1
        check(ncclBroadcast(send, recv, std::max<std::size_t>(1, total / 2), ncclBfloat16, 0, c, s.stream), c, what);
        break;
      default:
        check(ncclAllReduce(send, recv, std::max<std::size_t>(1, total / 4), ncclFloat32, ncclSum, c, s.stream), c, what);
    }
  }

  void enqueue_shift(StreamId stream, CommId comm, double bytes, int shift) override {
    Stream& s = *streams_.at(static_cast<std::size_t>(stream));
    ncclComm_t c = comms_.at(static_cast<std::size_t>(comm));
    int n = 1;
    int me = 0;
    check(ncclCommCount(c, &n), c, "ncclCommCount");
    check(ncclCommUserRank(c, &me), c, "ncclCommUserRank");
    const auto count = std::max<std::size_t>(1, static_cast<std::size_t>(bytes) / 2);  // bf16 activations
    const std::string what = fmt::format("rank {}: ring step of {} bytes", env_.rank, static_cast<std::size_t>(bytes));
    check(ncclGroupStart(), c, what);
    check(ncclSend(s.send.get(), count, ncclBfloat16, (me + shift) % n, c, s.stream), c, what);
    check(ncclRecv(s.recv.get(), count, ncclBfloat16, ((me - shift) % n + n) % n, c, s.stream), c, what);
    check(ncclGroupEnd(), c, what);
  }

  void record(StreamId stream, EventId event) override {
    check(cudaEventRecord(events_.at(static_cast<std::size_t>(event)), streams_.at(static_cast<std::size_t>(stream))->stream),
          "cudaEventRecord");
  }
  void wait(StreamId stream, EventId event) override {
    check(cudaStreamWaitEvent(streams_.at(static_cast<std::size_t>(stream))->stream, events_.at(static_cast<std::size_t>(event)), 0),
          "cudaStreamWaitEvent");
  }

  bool query(EventId event) override {
    const cudaError_t e = cudaEventQuery(events_.at(static_cast<std::size_t>(event)));
    if (e == cudaErrorNotReady) {
      // A failed peer shows up as an asynchronous NCCL error, not as a late event.
      for (ncclComm_t c : comms_) {
        if (c == nullptr) continue;
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(c, &async);
        check(async, c, fmt::format("rank {}: a collective failed", env_.rank));
      }
      return false;
    }
    check(e, fmt::format("rank {}: a kernel failed", env_.rank));
    return true;
  }

  double elapsed(EventId from, EventId to) override {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, events_.at(static_cast<std::size_t>(from)), events_.at(static_cast<std::size_t>(to))),
          "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }

  std::optional<double> shared_clock(EventId /*event*/) override { return std::nullopt; }

  std::vector<double> gather(std::span<const double> values) override {
    DeviceBuffer in;
    DeviceBuffer out;
    const std::size_t bytes = std::max<std::size_t>(8, values.size() * sizeof(double));
    in.ensure(bytes, env_.rank, "gather");
    out.ensure(bytes * static_cast<std::size_t>(env_.world), env_.rank, "gather");
    check(cudaMemcpy(in.get(), values.data(), values.size() * sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(ncclAllGather(in.get(), out.get(), values.size(), ncclFloat64, comms_.front(), internal_), comms_.front(),
          "gather of the timelines");
    check(cudaStreamSynchronize(internal_), "gather of the timelines");
    std::vector<double> result(values.size() * static_cast<std::size_t>(env_.world));
    check(cudaMemcpy(result.data(), out.get(), result.size() * sizeof(double), cudaMemcpyDeviceToHost), "cudaMemcpy");
    return result;
  }

  void abort() noexcept override {
    if (aborted_.exchange(true)) return;
    for (ncclComm_t c : comms_) {
      if (c != nullptr) ncclCommAbort(c);
    }
  }

 private:
  // y[m, n] = x[m, k] W[n, k]^T, row-major, in column-major cuBLAS terms: y^T = W x^T, i.e.
  // C (n x m) = op_T(A: k x n) op_N(B: k x m), bf16 in and out, fp32 accumulation.
  void gemm(Stream& s, const GemmKernel& g) {
    const float alpha = 1.0F;
    const float beta = 0.0F;
    const auto m = static_cast<int>(g.m);
    const auto n = static_cast<int>(g.n);
    const auto k = static_cast<int>(g.k);
    const cublasStatus_t st = cublasGemmStridedBatchedEx(s.blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, s.b.get(), CUDA_R_16BF, k,
                                                         g.n * g.k, s.a.get(), CUDA_R_16BF, k, g.m * g.k, &beta, s.c.get(), CUDA_R_16BF, n,
                                                         g.m * g.n, static_cast<int>(g.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) check(st, gemm_name(g));  // the message only on failure: this runs per timed iteration
  }

  // "rank R: bf16 GEMM MxNxK (batch B)", "... fp8 precise GEMM ...", for errors.
  [[nodiscard]] std::string gemm_name(const GemmKernel& g) const {
    return fmt::format("rank {}: {} GEMM {}x{}x{} (batch {})", env_.rank, validate::label(g.precision), g.m, g.n, g.k, g.batch);
  }

  // The same product in float8 e4m3 through cuBLASLt, with tensorwise scales of 1 on the device
  // (torch._scaled_mm's call for torchao's tensorwise recipe): TN layout as above, which Hopper's
  // float8 kernels require, bf16 output, fast accumulation (the forward GEMM's setting) or precise
  // (CUBLASLT_MATMUL_DESC_FAST_ACCUM 0, the gradient GEMMs').
  void gemm_fp8(Stream& s, const GemmKernel& g) {
    if (!fp8_) {
      throw RuntimeError(fmt::format("{}: float8 GEMMs need a GPU of compute capability 8.9 or later; {} is {}", gemm_name(g), device_,
                                     compute_capability_));
    }
    if (g.k % 16 != 0 || g.n % 16 != 0)
      throw RuntimeError(fmt::format("{}: cuBLASLt's float8 GEMMs need K and N multiples of 16", gemm_name(g)));
    if (lt_ == nullptr) {
      check(cublasLtCreate(&lt_), "cublasLtCreate");
      scales_.ensure(sizeof(float), env_.rank, "float8 scales");
      const float one = 1.0F;
      check(cudaMemcpy(scales_.get(), &one, sizeof one, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    s.workspace.ensure(kLtWorkspace, env_.rank, "cuBLASLt workspace");
    const auto elements = [&](std::int64_t x, std::int64_t y) { return static_cast<std::size_t>(g.batch * x * y) + 256; };
    randomize(s.a8, s.a8.ensure(elements(g.m, g.k), env_.rank, "float8 GEMM inputs"), true, 3);
    randomize(s.b8, s.b8.ensure(elements(g.n, g.k), env_.rank, "float8 GEMM weights"), true, 4);
    auto& plan = s.fp8_plans[{g.batch, g.m, g.n, g.k, g.precision}];
    if (!plan) plan = make_fp8_plan(g, gemm_name(g));
    const float alpha = 1.0F;
    const float beta = 0.0F;
    const cublasStatus_t st = cublasLtMatmul(lt_, plan->op, &alpha, s.b8.get(), plan->a, s.a8.get(), plan->b, &beta, s.c.get(), plan->c,
                                             s.c.get(), plan->c, &plan->heuristic.algo, s.workspace.get(), kLtWorkspace, s.stream);
    if (st != CUBLAS_STATUS_SUCCESS) check(st, gemm_name(g));
  }

  std::unique_ptr<Fp8Plan> make_fp8_plan(const GemmKernel& g, const std::string& what) {
    auto p = std::make_unique<Fp8Plan>();
    check(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), what);
    const cublasOperation_t ta = CUBLAS_OP_T;
    const cublasOperation_t tb = CUBLAS_OP_N;
    const std::int8_t fast_accum = g.precision == validate::GemmPrecision::fp8_precise ? 0 : 1;
    const void* scale = scales_.get();
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), what);
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), what);
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum, sizeof fast_accum), what);
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof scale), what);
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale, sizeof scale), what);
    // Column-major: A = W^T stored k x n, B = x^T stored k x m, C = y^T stored n x m.
    const auto layout = [&](cublasLtMatrixLayout_t* l, cudaDataType_t type, std::int64_t rows, std::int64_t cols) {
      check(cublasLtMatrixLayoutCreate(l, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), rows), what);
      if (g.batch > 1) {
        const auto count = static_cast<std::int32_t>(g.batch);
        const std::int64_t stride = rows * cols;
        check(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), what);
        check(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride), what);
      }
    };
    layout(&p->a, CUDA_R_8F_E4M3, g.k, g.n);
    layout(&p->b, CUDA_R_8F_E4M3, g.k, g.m);
    layout(&p->c, CUDA_R_16BF, g.n, g.m);
    cublasLtMatmulPreference_t pref = nullptr;
    check(cublasLtMatmulPreferenceCreate(&pref), what);
    const std::uint64_t ws = kLtWorkspace;
    int found = 0;
    const cublasStatus_t st = [&] {
      const cublasStatus_t set = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
      if (set != CUBLAS_STATUS_SUCCESS) return set;
      return cublasLtMatmulAlgoGetHeuristic(lt_, p->op, p->a, p->b, p->c, p->c, pref, 1, &p->heuristic, &found);
    }();
    cublasLtMatmulPreferenceDestroy(pref);
    check(st, what);
    if (found == 0) throw RuntimeError(fmt::format("{}: cuBLASLt has no float8 kernel for this shape", what));
    return p;
  }

  RankEnv env_;
  std::string device_;
  bool fp8_ = false;
  std::string compute_capability_;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer scales_;
  int nccl_version_ = 0;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<cudaEvent_t> events_;
  std::vector<ncclComm_t> comms_;  // [0]: the world
  cudaStream_t internal_ = nullptr;
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

}  // namespace shardsim::replay
