# The two commands a newcomer types: `make demo` and `make test`. Everything else is a helper.
SHELL := /bin/bash
JOBS ?= $(shell nproc)

.PHONY: setup build build-release demo test test-unit test-sanitize test-tsan format format-check tidy bench fuzz clean

setup:
	@bash scripts/setup.sh

build: setup
	@cmake --preset dev >/dev/null
	@cmake --build --preset dev -j $(JOBS)

build-release: setup
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

# The demo needs the two programs it runs, not the tests and benchmarks a full build makes.
demo: setup
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target candle-graph profile-demo
	@bash scripts/demo.sh build/release

test-unit: build
	@ctest --preset dev -j $(JOBS)

test-sanitize: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)
	@ctest --preset asan -j $(JOBS)

test-tsan: setup
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS) --target test_profile profile-demo test_runtime
	@ctest --preset tsan -j $(JOBS)

test: format-check test-unit test-sanitize test-tsan
	@FUZZ_SECONDS=$${FUZZ_SECONDS:-20} bash scripts/fuzz.sh
	@echo "make test: all suites passed"

format:
	@git ls-files '*.cpp' '*.hpp' '*.h' | xargs -r clang-format -i

format-check: setup
	@git ls-files -co --exclude-standard '*.cpp' '*.hpp' '*.h' | xargs -r clang-format --dry-run -Werror

bench: build-release
	@bash scripts/setup.sh --bench
	@bash bench/run.sh build/release

# FUZZ_SECONDS per target (default 20).
fuzz: setup
	@bash scripts/fuzz.sh

clean:
	rm -rf build out
