#include "replay/microbench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>
#include <tuple>

namespace shardsim::replay {
namespace {

constexpr int kSlots = 4;

class Timer {
 public:
  Timer(Backend& b, Watchdog& w, const BenchOptions& o)
      : b_(b), w_(w), o_(o), stream_(b.create_stream("bench")), e0_(b.create_event()), e1_(b.create_event()) {}
  [[nodiscard]] StreamId stream() const { return stream_; }

  // Mean seconds of one iteration of `enqueue(slot)`.
  template <class F>
  double time(const std::string& what, F enqueue) {
    for (int i = 0; i < o_.warmup; ++i) enqueue(i % kSlots);
    b_.record(stream_, e1_);
    await(what);
    b_.record(stream_, e0_);
    for (int i = 0; i < o_.iters; ++i) enqueue(i % kSlots);
    b_.record(stream_, e1_);
    await(what);
    return b_.elapsed(e0_, e1_) / o_.iters;
  }

 private:
  void await(const std::string& what) {
    w_.kick(what);
    auto pause = std::chrono::microseconds(2);
    while (!b_.query(e1_)) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }

  Backend& b_;
  Watchdog& w_;
  const BenchOptions& o_;
  StreamId stream_;
  EventId e0_;
  EventId e1_;
};

std::vector<double> geometric(double from, double to, double factor) {
  std::vector<double> out;
  for (double v = from; v <= to * 1.0001; v *= factor) out.push_back(v);
  return out;
}

// (m, n, k, precision) of the GEMMs to time.
using GemmShape = std::tuple<std::int64_t, std::int64_t, std::int64_t, validate::GemmPrecision>;
using validate::GemmPrecision;

std::vector<GemmKernel> gemm_shapes(const graph::StepGraph* g, bool fp8) {
  std::set<GemmShape> shapes;
  if (g != nullptr) {
    // Every float8 type (tensorwise, rowwise, MXFP8) is timed as tensorwise float8.
    for (std::size_t i = 0; i < g->size(); ++i) {
      for (const auto& m : g->op(static_cast<int>(i)).work.gemms) shapes.insert({m.m, m.n, m.k, validate::harness_precision(m)});
    }
  } else {
    // Llama 3.1 8B's projections (hidden 4096, GQA k/v 1024, MLP 14336) at 1k..16k tokens, their
    // gradient GEMMs at 16k (with the forward ones, the reference block gpu.efficiency.matmul
    // describes: `shardsim calibrate --topology` reads the float8 efficiencies off it), and one
    // rank's projections under TP 8 (wq 512, wk / wv 128, w1 / w3 1792 outputs; wo 512, w2 1792
    // inputs), where float8 gains least.
    for (std::int64_t tokens : {1024, 4096, 16384}) {
      for (auto [n, k] : {std::pair{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}})
        shapes.insert({tokens, n, k, GemmPrecision::bf16});
    }
    for (const auto& [r, gradient] : graph::reference_block()) shapes.insert({r.m, r.n, r.k, GemmPrecision::bf16});
    for (auto [n, k] : {std::pair{512, 4096}, {128, 4096}, {1792, 4096}, {4096, 512}, {4096, 1792}})
      shapes.insert({16384, n, k, GemmPrecision::bf16});
  }
  if (fp8) {
    // Each shape in float8 with both accumulations: fast (torchao's forward GEMM) and precise
    // (its gradient GEMMs).
    const std::set<GemmShape> high = shapes;
    for (const auto& [m, n, k, precision] : high) {
      shapes.insert({m, n, k, GemmPrecision::fp8});
      shapes.insert({m, n, k, GemmPrecision::fp8_precise});
    }
  }
  std::vector<GemmKernel> out;
  std::set<GemmShape> seen;
  for (const auto& [m, n, k, precision] : shapes) {
    // The graph's shape, and the same with 1/16 and 1/4 of the rows: the curve's small end.
    for (std::int64_t div : {16, 4, 1}) {
      const std::int64_t mm = std::max<std::int64_t>(1, m / div);
      if (seen.insert({mm, n, k, precision}).second) out.push_back({1, mm, n, k, precision});
    }
  }
  return out;
}

std::vector<graph::AttentionCall> attention_calls(const graph::StepGraph* g) {
  std::vector<graph::AttentionCall> base;
  if (g != nullptr) {
    for (std::size_t i = 0; i < g->size(); ++i) {
      for (const auto& a : g->op(static_cast<int>(i)).work.attention) base.push_back(a);
    }
  } else {
    for (bool bwd : {false, true}) base.push_back({1, 8192, 32, 8, 128, true, bwd});
  }
  std::vector<graph::AttentionCall> out;
  std::set<std::tuple<std::int64_t, std::int64_t, int, int, int, bool, bool>> seen;
  for (const auto& a : base) {
    for (std::int64_t div : {4, 2, 1}) {
      graph::AttentionCall v = a;
      v.seq = std::max<std::int64_t>(1, a.seq / div);
      if (seen.insert({v.batch, v.seq, v.heads, v.kv_heads, v.head_dim, v.causal, v.backward}).second) out.push_back(v);
    }
  }
  return out;
}

}  // namespace

validate::BenchResults run_microbenchmarks(Backend& b, const BenchOptions& o, Watchdog& w) {
  validate::BenchResults r;
  r.backend = b.name();
  r.device = b.device();
  r.compute_scale = o.compute_scale;
  r.bytes_scale = o.bytes_scale;
  Timer timer(b, w, o);
  const StreamId s = timer.stream();

  // Buffers for the largest of everything, up front.
  KernelFootprint f;
  const auto shapes = o.gemm ? gemm_shapes(o.graph, o.fp8) : std::vector<GemmKernel>{};
  const auto calls = o.attention ? attention_calls(o.graph) : std::vector<graph::AttentionCall>{};
  const auto copies = o.memory ? geometric(o.min_copy, o.max_copy, o.factor) : std::vector<double>{};
  for (const auto& g : shapes) f.add(g);
  for (const auto& a : calls) {
    for (const auto& g : attention_kernels(a)) f.add(g);
  }
  for (double c : copies) f.add(CopyKernel{c});
  b.reserve(s, f, o.collectives ? o.max_bytes : 4.0);

  for (const auto& g : shapes) {
    const std::string what = fmt::format("{} GEMM {}x{}x{}", validate::label(g.precision), g.m, g.n, g.k);
    r.gemms.push_back({g.m, g.n, g.k, g.batch, timer.time(what, [&](int) { b.enqueue(s, g); }), g.precision});
  }
  for (const auto& a : calls) {
    const auto kernels = attention_kernels(a);
    const double t = timer.time(fmt::format("attention seq {}", a.seq), [&](int) {
      for (const auto& k : kernels) b.enqueue(s, k);
    });
    r.attention.push_back({a, t});
  }
  for (double c : copies)
    r.memory.push_back({c, timer.time(fmt::format("copy of {:g} bytes", c / 2), [&](int) { b.enqueue(s, CopyKernel{c}); })});

  if (o.collectives && b.world() > 1) {
    std::vector<int> lengths;
    for (int n = 2; n < b.world(); n *= 2) {
      if (b.world() % n == 0) lengths.push_back(n);
    }
    lengths.push_back(b.world());
    for (int n : lengths) {
      const auto link = n <= o.ranks_per_node ? config::LinkClass::nvlink : config::LinkClass::nic;
      const CommId comm = b.split_communicator(b.rank() / n, b.rank());
      for (auto kind : {graph::OpKind::all_gather, graph::OpKind::reduce_scatter, graph::OpKind::all_reduce}) {
        for (double bytes : geometric(o.min_bytes, o.max_bytes, o.factor)) {
          const double t = timer.time(fmt::format("{} of {:g} bytes over {} ranks", graph::to_string(kind), bytes, n),
                                      [&](int slot) { b.enqueue_collective(s, comm, kind, bytes, slot); });
          r.collectives.push_back({kind, link, n, std::min(n, o.ranks_per_node), bytes, t});
        }
      }
    }
    // The slowest rank's time of each collective.
    std::vector<double> mine;
    for (const auto& c : r.collectives) mine.push_back(c.seconds);
    w.kick("gathering collective times");
    const auto all = b.gather(mine);
    for (std::size_t i = 0; i < r.collectives.size(); ++i) {
      for (int rank = 0; rank < b.world(); ++rank)
        r.collectives[i].seconds = std::max(r.collectives[i].seconds, all[static_cast<std::size_t>(rank) * mine.size() + i]);
    }
  }
  return r;
}

}  // namespace shardsim::replay
