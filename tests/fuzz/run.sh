#!/bin/sh
# run.sh — runs one libFuzzer target (built in the clang tree) over the
# inputs kept in the source tree: tests/fuzz/corpus/NAME (the seed corpus)
# and tests/fuzz/crashes/NAME (every input that ever crashed it, kept so
# that the fix stays fixed).
#
#   run.sh --runs N FUZZER WORK_DIR
#       make test's run (ctest fuzz.NAME): replays the corpus and the
#       crashes, then N mutations from seed 1, starting from an empty
#       WORK_DIR each time, so that two runs run the same inputs: the same
#       result on every machine, whatever its load.
#   run.sh --seconds S FUZZER WORK_DIR
#       make fuzz's run: open-ended fuzzing from a random seed for S
#       seconds; WORK_DIR keeps the corpus it grows from one run to the
#       next, and a crash is written to WORK_DIR/crashes/ with the command
#       that replays it.
#
# Exits with the fuzzer's status: 0 when nothing crashed.
set -eu
usage() {
    echo "usage: run.sh --runs N | --seconds S FUZZER WORK_DIR" >&2
    exit 2
}
[ $# -eq 4 ] || usage
mode=$1 count=$2 fuzzer=$3 work=$4
case $count in '' | *[!0-9]*) usage ;; esac
name=$(basename "$fuzzer")
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/corpus/$name
crashes=$here/crashes/$name
[ -d "$corpus" ] || { echo "run.sh: no seed corpus $corpus" >&2; exit 2; }
inputs=$corpus
[ -d "$crashes" ] && inputs="$inputs $crashes"

case $mode in
--runs)
    rm -rf "$work"
    mkdir -p "$work/new"
    # shellcheck disable=SC2086 # inputs: one or two directories, no spaces
    exec "$fuzzer" -seed=1 -runs="$count" -rss_limit_mb=4096 -timeout=60 -error_exitcode=1 \
        -artifact_prefix="$work/" "$work/new" $inputs
    ;;
--seconds)
    mkdir -p "$work/corpus" "$work/crashes"
    # shellcheck disable=SC2086
    if "$fuzzer" -max_total_time="$count" -rss_limit_mb=4096 -timeout=10 -error_exitcode=1 \
        -artifact_prefix="$work/crashes/" "$work/corpus" $inputs; then
        exit 0
    else
        status=$?
    fi
    echo "run.sh: $name crashed; the input is in $work/crashes/." >&2
    echo "  replay: $fuzzer $work/crashes/<file>" >&2
    echo "  keep it: copy it into tests/fuzz/crashes/$name/ with the fix" >&2
    exit "$status"
    ;;
*) usage ;;
esac
