#include "core/registry.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>

using namespace shardsim;

namespace {

struct Named {
  std::string_view name;
  int value = 0;
};

class Part {
 public:
  explicit Part(std::string_view n) : name_(n) {}
  [[nodiscard]] std::string_view name() const { return name_; }

 private:
  std::string_view name_;
};

}  // namespace

TEST_CASE("a registry finds entries by name and keeps their order") {
  Registry<Named> r("widget");
  r.add({"alpha", 1});
  r.add({"beta", 2});
  REQUIRE(r.find("beta") != nullptr);
  CHECK(r.find("beta")->value == 2);
  CHECK(r.find("gamma") == nullptr);
  CHECK(r.names() == std::vector<std::string_view>{"alpha", "beta"});
  CHECK(r.get("alpha", {}, "x").value == 1);
}

TEST_CASE("entries held by pointer are named by their name() method") {
  Registry<std::unique_ptr<Part>> r("part");
  r.add(std::make_unique<Part>("ring"));
  r.add(std::make_unique<Part>("tree"));
  CHECK(r.get("tree", {}, "k")->name() == "tree");
}

TEST_CASE("an unknown name lists the valid ones, extra names first, and the likeliest typo") {
  Registry<Named> r("widget");
  r.add({"alpha", 1});
  r.add({"beta", 2});
  constexpr std::array<std::string_view, 1> kAuto{"auto"};
  CHECK_THROWS_WITH_AS((void)r.get("alpah", Location{"f.yaml", 3, 7}, "a.b", kAuto),
                       "f.yaml:3:7: error: a.b: unknown widget \"alpah\"; expected one of auto, alpha, beta (did you mean \"alpha\"?)",
                       ConfigError);
  // Nothing close: no guess.
  CHECK_THROWS_WITH_AS((void)r.get("zzzzzzzz", Location{"f.yaml", 1, 1}, "a"),
                       "f.yaml:1:1: error: a: unknown widget \"zzzzzzzz\"; expected one of alpha, beta", ConfigError);
}
