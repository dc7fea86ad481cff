# lmscore — thin wrapper over CMake.
#   make run    install missing Debian packages, build, make the demo model, serve gRPC on
#               :50051 and the HTTP API on :8080
#   make test   the whole test suite, built with gcc + ASan/UBSan (libFuzzer targets: clang),
#               in an environment of its own: the variables that configure the
#               daemon, the CLI, gRPC, OpenMP or a proxy are cleared first
#   make fuzz   open-ended fuzzing: each libFuzzer target FUZZ_SECONDS (default 60) from
#               a random seed, growing a corpus under $(FUZZ_BUILD)/fuzz (tests/fuzz/run.sh)
#   make bench  the benchmarks (release build); each part writes its tables into
#               its block of docs/benchmarks.md (bench/engine/run-all.sh)
#   make image  the container image with podman (--format docker), from Debian base images
#               made with debootstrap; EXTRA_CA=FILE... for a TLS-intercepting proxy's CA
BUILD      ?= build
TEST_BUILD ?= build-test
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
LISTEN     ?= 0.0.0.0:50051
HTTP_LISTEN ?= 0.0.0.0:8080
MODEL      ?= $(BUILD)/models/tiny-qwen3.gguf
# The release tree skips the test suite (its packages come with `make test`).
BUILD_TESTS ?= OFF
IMAGE      ?= lmscore:$(shell grep -o 'lmscore VERSION [0-9.]*' CMakeLists.txt | cut -d' ' -f3)
EXTRA_CA   ?=
FUZZ_SECONDS ?= 60
# What make test clears: the daemon's and the CLI's settings (LMSCORE_*), gRPC's
# and OpenMP's (GRPC_*, OMP_*), systemd's hand-over to a service (NOTIFY_SOCKET,
# WATCHDOG_*, LISTEN_*, JOURNAL_STREAM), proxies (the tests talk to loopback
# only). OPENBLAS_* stay: nothing in the suite may depend on them.
TEST_ENV_CLEARED = $$(env | sed -n 's/^\(\(LMSCORE\|GRPC\|OMP\|WATCHDOG\|LISTEN\)_[A-Za-z0-9_]*\|NOTIFY_SOCKET\|JOURNAL_STREAM\|[A-Za-z_]*_proxy\|[A-Z_]*_PROXY\)=.*/-u \1/p')

.PHONY: all deps test-deps build models run test-tree test fuzz-build fuzz bench image format clean

all: build

deps:
	@sh scripts/install-deps.sh

test-deps:
	@sh scripts/install-deps.sh --test

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DLMSCORE_BUILD_TESTS=$(BUILD_TESTS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

models: build
	cmake --build $(BUILD) --target models

run: models
	exec $(BUILD)/service/lmscored --model $(MODEL) --listen $(LISTEN) --http-listen $(HTTP_LISTEN)

fuzz-build: test-deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DLMSCORE_SANITIZE=ON -DLMSCORE_FUZZ=ON >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

test-tree: fuzz-build
	CC=gcc cmake -S . -B $(TEST_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DLMSCORE_SANITIZE=ON -DLMSCORE_FUZZ_DIR=$(abspath $(FUZZ_BUILD)) >/dev/null

test: test-tree
	cmake --build $(TEST_BUILD) -j $(JOBS)
	cmake --build $(TEST_BUILD) --target models
	cd $(TEST_BUILD) && env $(TEST_ENV_CLEARED) LC_ALL=C.UTF-8 OMP_WAIT_POLICY=passive \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 1200 $(CTEST_ARGS)

# The tokenizer fuzzer reads the tokenizers that the test tree fetches.
fuzz: test-tree
	cmake --build $(TEST_BUILD) --target tokenizers
	@status=0; for f in $(FUZZ_BUILD)/tests/fuzz/fuzz_*; do \
	  [ -x "$$f" ] || continue; echo "== $$(basename $$f): $(FUZZ_SECONDS) s"; \
	  LMSCORE_BUILD_DIR=$(abspath $(TEST_BUILD)) LMSCORE_SOURCE_DIR=$(CURDIR) \
	    sh tests/fuzz/run.sh --seconds $(FUZZ_SECONDS) "$$f" $(FUZZ_BUILD)/fuzz/$$(basename $$f) \
	    || status=1; \
	done; exit $$status

bench:
	@sh scripts/install-deps.sh --bench
	$(MAKE) build BUILD_TESTS=ON
	cmake --build $(BUILD) --target bench

image: test-deps
	sh scripts/debian-base-images.sh $(BUILD)/image-cache
	opts=$$(sh scripts/podman-options.sh) && \
	  podman build $$opts --format docker --pull=never --network host \
	    $(if $(EXTRA_CA),--build-arg EXTRA_CA_PEM="$$(cat $(EXTRA_CA))") --tag $(IMAGE) .
	podman image inspect $(IMAGE) --format '$(IMAGE): {{.Size}} bytes'

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(TEST_BUILD) $(FUZZ_BUILD)
