#!/bin/sh
# Installs the pinned node clients (node-clients/package-lock.json:
# grpc-js-reflection-client with @grpc/grpc-js for test_reflection.py,
# cohere-ai for test_http_clients.py) into DIR. Idempotent: an install
# from the same lockfile is kept.
#   install_node_clients.sh DIR
set -eu
dir=$1
src=$(cd "$(dirname "$0")/node-clients" && pwd)
mkdir -p "$dir"
if [ -d "$dir/node_modules/grpc-js-reflection-client" ] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dir/"
cd "$dir"
npm ci --no-audit --no-fund --ignore-scripts
test -d node_modules/grpc-js-reflection-client && test -d node_modules/cohere-ai
