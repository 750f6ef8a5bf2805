// fully_shard's (FSDP2) own behaviour, counted on the tiny Llama's step graph: its reduction's
// dtype handling, where its reduce-scatter input is allocated, how its root and the modules
// outside the blocks are sharded and gathered.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures/fixtures.hpp"

using namespace shardsim;

namespace {

graph::Prepared tiny(const std::vector<std::string>& sets = {}) {
  return test::prepared("tests/data/tiny_llama.yaml", sets);
}

}  // namespace

TEST_CASE("FSDP2 divides only an fp16 reduction, and casts the reduced shard to the parameters' dtype") {
  // The copy-in of layers.1 (3,163,136 elements, none padded: every dim 0 divides by 8; 395,392 a
  // shard) reads the bf16 gradients and writes the reduce-scatter input. fp32 reduce, fp32
  // parameters: 2 + 4 bytes an element, nothing else (18,978,816 B). bf16 reduce: 2 + 2, and the
  // reduced shard cast to fp32, 2 + 4 a shard element: 12,652,544 + 2,372,352 = 15,024,896 B.
  // fp16 reduce (_get_gradient_divide_factors: overflow risk) divides before and after too, by 4
  // and 2 over 8 ranks: + 2 x 2 x 3,163,136 + 2 x 2 x 395,392 = 29,259,008 B.
  const auto copy_in = [](const std::vector<std::string>& sets) {
    const auto p = tiny(sets);
    const auto ops = test::first_ops_named(p, "copy-in layers.1");
    REQUIRE(ops.size() == 1);
    return ops.front()->work;
  };
  const auto fp32 = copy_in({"fsdp.version=2"});
  CHECK(fp32.memory_bytes == doctest::Approx(18'978'816.0).scale(0));
  CHECK(fp32.launches == 1);
  const auto bf16 = copy_in({"fsdp.version=2", "fsdp.mixed_precision.reduce=bf16"});
  CHECK(bf16.memory_bytes == doctest::Approx(15'024'896.0).scale(0));
  CHECK(bf16.launches == 2);
  const auto fp16 = copy_in({"fsdp.version=2", "fsdp.mixed_precision.reduce=fp16"});
  CHECK(fp16.memory_bytes == doctest::Approx(29'259'008.0).scale(0));
  CHECK(fp16.launches == 4);
}

TEST_CASE("FSDP2's reduce-scatter input is allocated from the compute stream's pool, before torch 2.5 from the reduce-scatter stream's") {
  // layers.1's fp32 reduce-scatter input: 3,163,136 elements x 4 bytes = 12,652,544 bytes, made by
  // its copy-in and freed when its reduce-scatter ends (pytorch#129721 moved it to the default
  // stream; fsdp.copy_in_stream: reduce_scatter for fully_shard before it).
  const auto pool_of_input = [](const std::vector<std::string>& sets) {
    const auto p = tiny(sets);
    const auto copies = test::first_ops_named(p, "copy-in layers.1");
    const auto reduces = test::first_ops_named(p, "RS layers.1");
    REQUIRE(copies.size() == 1);
    REQUIRE(reduces.size() == 1);
    std::optional<graph::Pool> made;
    std::optional<graph::Pool> freed;
    for (const auto& m : copies.front()->memory) {
      if (m.category == graph::MemCategory::reduce_buffers && m.bytes == doctest::Approx(12'652'544.0).scale(0)) made = m.pool;
    }
    for (const auto& m : reduces.front()->memory) {
      if (m.category == graph::MemCategory::reduce_buffers && m.bytes == doctest::Approx(-12'652'544.0).scale(0)) freed = m.pool;
    }
    REQUIRE(made.has_value());
    CHECK(made == freed);
    return *made;
  };
  CHECK(pool_of_input({"fsdp.version=2"}) == graph::Pool::compute);
  CHECK(pool_of_input({"fsdp.version=2", "fsdp.copy_in_stream=reduce_scatter"}) == graph::Pool::reduce_scatter);
}

TEST_CASE("FSDP2 reshards its root after the model's forward only when told to, and gathers it again after the loss's backward") {
  // The root unit: the embedding and the output head (1,000 x 512 each) and the final norm (512),
  // 1,024,512 bf16 parameters = 2,049,024 bytes unsharded. fully_shard(model,
  // reshard_after_forward=True) frees them when the model's forward ends, before the loss (computed
  // outside the model), and its pre-backward hook, on the model's output, gathers them again once
  // the loss's backward has made that output's gradient (pytorch#154704).
  const double root_bytes = 2.0 * (1000 * 512 + 1000 * 512 + 512);
  const auto names = [](const graph::Prepared& p) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < p.graph.size(); ++i) out.push_back(p.graph.op(static_cast<int>(i)).name);
    return out;
  };
  const auto freed_by = [&](const graph::Prepared& p, std::string_view name) {
    double freed = 0;
    for (const auto* op : test::first_ops_named(p, name)) {
      for (const auto& m : op->memory) {
        if (m.category == graph::MemCategory::unsharded_params && m.bytes < 0) freed -= m.bytes;
      }
    }
    return freed;
  };
  const auto kept = tiny({"fsdp.version=2"});
  const auto resharded = tiny({"fsdp.version=2", "fsdp.reshard_root_after_forward=true"});
  CHECK(freed_by(kept, "FWD output") == doctest::Approx(0.0).scale(1));
  CHECK(freed_by(resharded, "FWD output") == doctest::Approx(root_bytes).scale(0));
  const auto kept_names = names(kept);
  const auto resharded_names = names(resharded);
  CHECK(std::ranges::count(kept_names, "AG root") == 1);
  REQUIRE(std::ranges::count(resharded_names, "AG root") == 2);
  const auto position = [&](std::string_view name, std::size_t from) {
    return static_cast<std::size_t>(std::find(resharded_names.begin() + static_cast<std::ptrdiff_t>(from), resharded_names.end(), name) -
                                    resharded_names.begin());
  };
  const std::size_t second = position("AG root", position("AG root", 0) + 1);
  CHECK(position("BWD loss", 0) < second);
  CHECK(second < position("BWD output", 0));
  // FSDP1 never reshards its root: the setting is a warning there and changes nothing.
  CHECK(std::ranges::count(names(tiny({"fsdp.reshard_root_after_forward=true"})), "AG root") == 1);
}

TEST_CASE("outer_modules units gathers the embedding before forward and again in backward, the root never") {
  // torchtitan since #1094: fully_shard(tok_embeddings) reshards after forward like the blocks;
  // fully_shard([norm, output]) does not by default (keep_last_unit_unsharded: the last unit to
  // leave forward is the first to run backward), and the root holds nothing to gather. The tiny
  // Llama's embedding is 1,000 x 512 bf16 = 1,024,000 bytes; norm and head 512 + 512,000 elements.
  const auto count_named = [](const graph::Prepared& p, std::string_view name) {
    int n = 0;
    for (std::size_t i = 0; i < p.graph.size(); ++i) n += p.graph.op(static_cast<int>(i)).name == name;
    return n;
  };
  const auto p = tiny({"fsdp.version=2", "fsdp.wrap.outer_modules=units", "fsdp.keep_last_unit_unsharded=true"});
  CHECK(count_named(p, "AG root") == 0);
  CHECK(count_named(p, "AG tok_embeddings") == 2);
  CHECK(count_named(p, "AG norm-output") == 1);
  CHECK(count_named(p, "RS tok_embeddings") == 1);
  for (const auto* op : test::first_ops_named(p, "AG tok_embeddings")) CHECK(op->bytes == doctest::Approx(1'024'000).scale(1));
  for (const auto* op : test::first_ops_named(p, "AG norm-output")) CHECK(op->bytes == doctest::Approx(2.0 * 512'512).scale(1));
  // Without keep_last_unit_unsharded the head is freed after forward and gathered again.
  CHECK(count_named(tiny({"fsdp.version=2", "fsdp.wrap.outer_modules=units"}), "AG norm-output") == 2);
}
