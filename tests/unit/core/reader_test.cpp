#include "core/reader.hpp"

#include <doctest/doctest.h>

#include <array>

using namespace shardsim;

namespace {

constexpr std::array kParams{
    ParamSpec{"seq_len", "integer", "", "tokens per sequence"},
    ParamSpec{"micro_batch", "integer", "1", "sequences"},
    ParamSpec{"backward_prefetch", "pre | post | none", "pre", "prefetch"},
};
constexpr Schema kSchema{"training", "test", kParams};

ConfigNode map_of(std::initializer_list<std::pair<const char*, const char*>> kv) {
  ConfigNode n = ConfigNode::make_map(Location{"x.yaml", 1, 1});
  int line = 2;
  for (const auto& [k, v] : kv) {
    n.set(k, ConfigNode::make_scalar(v, Location{"x.yaml", line, 12}), Location{"x.yaml", line, 3});
    ++line;
  }
  return n;
}

}  // namespace

TEST_CASE("defaults come from the schema, required keys must be present") {
  const ConfigNode n = map_of({{"seq_len", "8192"}});
  Reader r(n, "training", kSchema);
  CHECK(r.integer("seq_len", 1, 1 << 20) == 8192);
  CHECK(r.integer("micro_batch", 1, 1 << 20) == 1);
  const ConfigNode empty = map_of({});
  Reader r2(empty, "training", kSchema);
  CHECK_THROWS_WITH_AS((void)r2.integer("seq_len", 1, 10), "x.yaml:1:1: error: training.seq_len: missing required key (expected integer)",
                       ConfigError);
}

TEST_CASE("integers accept scientific notation but not fractions or out-of-range values") {
  const ConfigNode n = map_of({{"seq_len", "1e4"}, {"micro_batch", "2.5"}});
  Reader r(n, "training", kSchema);
  CHECK(r.integer("seq_len", 1, 1 << 20) == 10000);
  CHECK_THROWS_WITH_AS((void)r.integer("micro_batch", 1, 8),
                       "x.yaml:3:12: error: training.micro_batch: expected an integer between 1 and 8; got \"2.5\"", ConfigError);
}

TEST_CASE("a misspelt choice or key gets a suggestion") {
  const ConfigNode n = map_of({{"backward_prefetch", "psot"}, {"seq_lne", "1"}});
  Reader r(n, "training", kSchema);
  constexpr std::array<std::string_view, 3> options{"pre", "post", "none"};
  CHECK_THROWS_WITH_AS(
      (void)r.choice("backward_prefetch", options),
      "x.yaml:2:12: error: training.backward_prefetch: expected one of pre, post, none; got \"psot\" (did you mean \"post\"?)",
      ConfigError);
  CHECK_THROWS_WITH_AS(r.finish(), "x.yaml:3:3: error: training.seq_lne: unknown key in training settings (did you mean \"seq_len\"?)",
                       ConfigError);
}

TEST_CASE("closest_match only suggests near misses") {
  constexpr std::array<std::string_view, 3> words{"full_shard", "shard_grad_op", "no_shard"};
  CHECK(closest_match("full_shrd", words) == "full_shard");
  CHECK(closest_match("zero3", words).empty());
}

TEST_CASE("closest_match takes an abbreviation for the shortest word it begins") {
  constexpr std::array<std::string_view, 5> words{"full_shard", "shard_grad_op", "no_shard", "hybrid_shard", "hybrid_shard_zero2"};
  CHECK(closest_match("hybrid", words) == "hybrid_shard");
  CHECK(closest_match("shard", words) == "shard_grad_op");
  CHECK(closest_match("hy", words).empty());  // too short to be an abbreviation
}

TEST_CASE("values quoted in messages are escaped and cut short") {
  CHECK(quote("ful_shard") == "\"ful_shard\"");
  CHECK(quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(quote(std::string("x\ny\t\x01", 5)) == "\"x\\ny\\t\\x01\"");
  CHECK(quote(std::string(100, 'a')) == "\"" + std::string(60, 'a') + "...\"");
  // Never cut inside a UTF-8 sequence: 59 ASCII characters, then "é" (two bytes) is kept whole.
  CHECK(quote(std::string(59, 'a') + "\xc3\xa9" + "zzz") == "\"" + std::string(59, 'a') + "\xc3\xa9...\"");
}
