#!/bin/sh
# podman-options.sh — prints the options `podman run` and `podman build` need
# on this machine for a container to start (nothing where the defaults work).
# Some sandboxes refuse podman's default rlimits (EPERM from setrlimit) or
# crun's cgroup setup (hybrid cgroup v1/v2): there runc with the limits the
# process already has works. Exits 1, with the last error, when nothing does.
# Needs a local image to probe with: $1 (default debian:bookworm-slim).
set -u
IMAGE=${1:-docker.io/library/debian:bookworm-slim}
nofile=$(ulimit -n)
candidates="|--ulimit host|--runtime runc --ulimit nofile=$nofile:$nofile --ulimit nproc=32768:32768"
IFS='|'
for opts in $candidates; do
  IFS=' '
  # shellcheck disable=SC2086
  if err=$(podman run --rm --pull=never --network none $opts "$IMAGE" true 2>&1); then
    echo "$opts"
    exit 0
  fi
  IFS='|'
done
echo "podman cannot start a container here: $err" >&2
exit 1
