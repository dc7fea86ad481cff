# shellcheck shell=sh
# machine.sh — sourced by each part of `make bench` (bench/*/run.sh): where
# the part writes its block of docs/benchmarks.md, and the line that heads
# the block, so that every table in the doc says what ran it and how to run
# it again.
#
#   bench_md PART BUILD_DIR
#       prints the path of PART's block: $BENCH_RESULTS/PART.md (run-all.sh
#       sets BENCH_RESULTS), else BUILD_DIR/bench-results/PART.md.
#   bench_head BUILD_DIR TIER THREADS COMMAND
#       prints the head line: the CPU model (/proc/cpuinfo) and CPU count,
#       the compute tier (TIER "engine": the one the engine picks on this CPU,
#       asked of BUILD_DIR's lmscore-local; other text as given), THREADS,
#       the load average when this file was sourced (on a shared machine it
#       says how much of the CPUs the part had), and COMMAND after the tuning
#       variables that were set then (those change which kernels run).
#   bench_block PART BUILD_DIR TIER THREADS COMMAND
#       writes PART's block, the head line then the Markdown on standard
#       input, and prints it (for the part's log).
#   bench_settings VAR...
#       prints VAR="value" for each VAR set and not empty: a part's own
#       variables, for the command in its head line.
#   bench_tee FILE COMMAND...
#       runs COMMAND with its standard output shown and appended to FILE (for
#       parts that print tables as they go); returns COMMAND's status.
#   bench_path PATH
#       prints PATH relative to the source tree when it lies inside it, so
#       that a command reads as run from the repository root.

bench_src=$(cd "$(dirname "$0")/../.." && pwd)
bench_load=$(cut -d' ' -f1-3 /proc/loadavg)
bench_env=""
for _v in OPENBLAS_CORETYPE OPENBLAS_L2_SIZE OMP_NUM_THREADS; do
    eval "_set=\${$_v+x} _val=\${$_v-}"
    # shellcheck disable=SC2154 # _set and _val are assigned by the eval
    [ -z "$_set" ] || bench_env="$bench_env$_v=$_val "
done

bench_md() {
    _dir=${BENCH_RESULTS:-$2/bench-results}
    mkdir -p "$_dir"
    echo "$_dir/$1.md"
}

bench_path() {
    case $1 in
    /*) _abs=$1 ;;
    *) _abs=$(pwd)/$1 ;;
    esac
    _abs=$(cd "$(dirname "$_abs")" 2>/dev/null && echo "$(pwd)/$(basename "$_abs")") || _abs=$1
    case $_abs in
    "$bench_src"/*) echo "${_abs#"$bench_src"/}" ;;
    *) echo "$_abs" ;;
    esac
}

bench_head() {
    _cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
    # nproc counts OMP_NUM_THREADS: the machine's CPUs are the ones this process may use.
    _cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
    _tier=$2
    if [ "$_tier" = engine ]; then
        _tier=$(echo '{"query": [1], "items": [[2]], "label_token_ids": [3]}' |
            "$1/tools/lmscore-local" --model "$1/models/tiny-qwen3.gguf" --request - |
            /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["isa"])') ||
            _tier="unknown (lmscore-local failed)"
    fi
    echo "**Machine:** ${_cpu:-unknown CPU} ($_cpus CPUs), compute tier $_tier, $3;" \
        "load average $bench_load (1/5/15 min) at the start. **Command:** \`$bench_env$4\`"
}

bench_block() {
    _md=$(bench_md "$1" "$2")
    {
        bench_head "$2" "$3" "$4" "$5"
        echo
        cat
    } >"$_md"
    cat "$_md"
}

bench_tee() {
    _file=$1
    shift
    _rc_file=$(mktemp)
    # The status is taken with || so that the caller's set -e cannot skip it.
    {
        _status=0
        "$@" || _status=$?
        echo "$_status" >"$_rc_file"
    } | tee -a "$_file"
    _rc=$(cat "$_rc_file")
    rm -f "$_rc_file"
    return "$_rc"
}

bench_settings() {
    for _v in "$@"; do
        eval "_val=\${$_v-}"
        [ -z "$_val" ] || printf '%s="%s" ' "$_v" "$_val"
    done
}
