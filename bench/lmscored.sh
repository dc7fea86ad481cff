# shellcheck shell=sh
# lmscored.sh — sourced by the benchmark scripts: runs lmscored on a free
# loopback port for the length of the script.
#
#   lmscored_start BUILD_DIR MODEL [DAEMON_ARGS...]
#       starts the daemon and waits until it serves; sets $pid and $port
#       (and $metrics_port when DAEMON_ARGS has --metrics-listen, $http_port
#       when it has --http-listen).
#       When it does not come up, prints its log and exits 1.
#   lmscored_stop
#       stops it (also done on exit).

lmscored_stop() {
    [ -n "${pid:-}" ] || return 0
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=""
}

lmscored_start() {
    _build=$1
    _model=$2
    shift 2
    _log=$(mktemp)
    "$_build/service/lmscored" --model "$_model" --listen 127.0.0.1:0 "$@" 2>"$_log" &
    pid=$!
    trap lmscored_stop EXIT
    port=""
    for _ in $(seq 1 1200); do
        if grep -q 'msg="serving"' "$_log"; then
            port=$(sed -n 's/.*msg="listening".* port=\([0-9]*\).*/\1/p' "$_log")
            metrics_port=$(sed -n 's/.*msg="metrics listening".* port=\([0-9]*\).*/\1/p' "$_log")
            http_port=$(sed -n 's/.*msg="HTTP listening".* port=\([0-9]*\).*/\1/p' "$_log")
            break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        echo "lmscored did not start on $_model:" >&2
        cat "$_log" >&2
        rm -f "$_log"
        exit 1
    fi
    rm -f "$_log"
}
