# lmscore — thin wrapper over CMake.
#   make run    install missing Debian packages, build, make the demo model, serve gRPC on
#               :50051 and the HTTP API on :8080
#   make test   the whole test suite, built with gcc + ASan/UBSan (libFuzzer targets: clang)
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

.PHONY: all deps test-deps build models run test bench image format clean

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

test: test-deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DLMSCORE_SANITIZE=ON -DLMSCORE_FUZZ=ON >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	CC=gcc cmake -S . -B $(TEST_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DLMSCORE_SANITIZE=ON -DLMSCORE_FUZZ_DIR=$(abspath $(FUZZ_BUILD)) >/dev/null
	cmake --build $(TEST_BUILD) -j $(JOBS)
	cmake --build $(TEST_BUILD) --target models
	cd $(TEST_BUILD) && OMP_WAIT_POLICY=passive ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 1200

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
