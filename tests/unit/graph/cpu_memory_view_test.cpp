// The CPU's view of device memory behind the caching allocator's backpressure (graph/
// cpu_memory_view.hpp), worked by hand on a 100-byte allocator.
#include "graph/cpu_memory_view.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace shardsim;
using graph::MemCategory;
using graph::Pool;
using graph::Stream;

namespace {

graph::Op op(int id, Stream stream, std::vector<graph::MemEffect> memory) {
  graph::Op o;
  o.id = id;
  o.stream = stream;
  o.memory = std::move(memory);
  return o;
}

}  // namespace

TEST_CASE("a gathered block freed on the CPU counts until the op that freed it has run") {
  graph::CpuMemoryView view(100, 10);
  // An all-gather of 50 bytes (issued: 60 of 100), then the compute op after which it is freed.
  view.issued(op(0, Stream::all_gather, {{MemCategory::unsharded_params, 50, false, Pool::all_gather}}));
  const graph::Op compute = op(1, Stream::compute, {});
  view.issued(compute);
  view.free_after(compute, 50);
  CHECK(view.live() == 60);
  CHECK(view.make_room(40).empty());  // 60 + 40 fits in 100: no wait
  // 60 + 41 does not: the CPU waits for op 1, and the 50 bytes are back.
  CHECK(view.make_room(41) == std::vector<int>{1});
  CHECK(view.live() == 10);
  CHECK(view.make_room(41).empty());  // nothing pending any more
}

TEST_CASE("blocks a stream allocates and frees itself return at once, and pending frees wait per stream") {
  graph::CpuMemoryView view(100, 0);
  // Activations kept by a forward op and freed by a backward op on the same stream: no wait.
  view.issued(op(0, Stream::compute, {{MemCategory::activations, 70, false, Pool::compute}}));
  view.issued(op(1, Stream::compute, {{MemCategory::activations, -70, true, Pool::compute}}));
  CHECK(view.live() == 0);
  // Host memory is not the GPU's.
  view.issued(op(2, Stream::h2d, {{MemCategory::sharded_params, 500, false, Pool::host}}));
  CHECK(view.live() == 0);
  // A partition copied to the GPU (10 bytes), all-gathered into 60 and freed at the all-gather's
  // end, and two gathered blocks of 30 released after compute ops 5 and 7.
  view.issued(op(3, Stream::h2d, {{MemCategory::sharded_params, 10, false, Pool::all_gather}}));
  view.issued(
      op(4, Stream::all_gather,
         {{MemCategory::unsharded_params, 60, false, Pool::all_gather}, {MemCategory::sharded_params, -10, true, Pool::all_gather}}));
  view.free_after(op(5, Stream::compute, {}), 30);
  view.free_after(op(7, Stream::compute, {}), 30);
  CHECK(view.live() == 70);
  // 70 + 50 > 100: the CPU waits for the last pending free of each stream (compute's op 7, the
  // all-gather stream's op 4), after which all 70 pending bytes are back.
  CHECK(view.make_room(50) == std::vector<int>{7, 4});
  CHECK(view.live() == 0);
}

TEST_CASE("with nothing pending an allocation that does not fit goes over: the report calls it out of memory") {
  graph::CpuMemoryView view(100, 90);
  CHECK(view.make_room(20).empty());
}

TEST_CASE("a block freed by a copy on another stream counts until the copy has run") {
  graph::CpuMemoryView view(100, 0);
  view.issued(op(0, Stream::compute, {{MemCategory::activations, 40, false, Pool::compute}}));
  // A checkpoint copied to the host: its GPU block returns when the copy on the d2h stream ends.
  view.issued(
      op(1, Stream::d2h, {{MemCategory::activations, 40, false, Pool::host}, {MemCategory::activations, -40, true, Pool::compute}}));
  CHECK(view.live() == 40);
  CHECK(view.make_room(70) == std::vector<int>{1});
  CHECK(view.live() == 0);
}
