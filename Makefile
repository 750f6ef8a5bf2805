# The two commands of the README's quick start: `make run` and `make test`.
# Both install missing Debian packages first (scripts/setup.sh), then configure and build
# with CMake presets. Build outputs go to build/<preset>/, never into the source tree.

JOBS ?= 2
PRESET ?= release
BUILD := build/$(PRESET)
SCENARIO ?= scenarios/llama3.1-8b_8xh100.yaml

.PHONY: all setup build run test bench validate dev-test fuzz ci clean install

all: build

setup:
	@scripts/setup.sh

$(BUILD)/CMakeCache.txt: | setup
	cmake --preset $(PRESET)

build: setup $(BUILD)/CMakeCache.txt
	cmake --build --preset $(PRESET) -j $(JOBS)

run: build
	$(BUILD)/sim/shardsim run $(SCENARIO)

test: build
	ctest --preset $(PRESET) -j $(JOBS)

bench: build
	$(BUILD)/tests/bench/shardsim_bench
	$(BUILD)/tests/bench/shardsim_published

# Installs shardsim, shardsim-replay, shardsim-bench and the topology library under PREFIX.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Predictions against published runs and the qualitative effects they report.
validate: build
	$(BUILD)/tests/bench/shardsim_published

# The sanitizer build (ASan + UBSan) and its test run.
dev-test:
	$(MAKE) test PRESET=dev

# Fuzzes the config loader for FUZZ_SECONDS (default 60) with libFuzzer: builds a clang build of
# the config layers under build/release/fuzz (tests/fuzz/run_fuzz.cmake) and fails on any crash.
FUZZ_SECONDS ?= 60
fuzz: build
	@scripts/setup.sh fuzz
	cmake -S . -B $(BUILD) -DSHARDSIM_FUZZ_SECONDS=$(FUZZ_SECONDS) > /dev/null
	ctest --preset fuzz

# What CI runs (.ci/run): the suite, the suite under ASan + UBSan, and the fuzzer.
ci: test dev-test fuzz

clean:
	rm -rf build
