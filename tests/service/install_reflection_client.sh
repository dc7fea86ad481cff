#!/bin/sh
# Installs the pinned reflection client (reflection-client/package-lock.json:
# grpc-js-reflection-client with @grpc/grpc-js) into DIR for
# test_reflection.py. Idempotent: an install from the same lockfile is kept.
#   install_reflection_client.sh DIR
set -eu
dir=$1
src=$(cd "$(dirname "$0")/reflection-client" && pwd)
mkdir -p "$dir"
if [ -d "$dir/node_modules/grpc-js-reflection-client" ] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dir/"
cd "$dir"
npm ci --no-audit --no-fund --ignore-scripts
test -d node_modules/grpc-js-reflection-client
