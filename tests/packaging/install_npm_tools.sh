#!/bin/sh
# install_npm_tools.sh PREFIX — installs the pinned npm linters/validators of
# tests/packaging/npm/ (package-lock.json) into PREFIX with `npm ci`, unless
# PREFIX already holds a finished install of exactly that lock file.
set -eu
PREFIX=${1:?usage: install_npm_tools.sh PREFIX}
HERE=$(cd "$(dirname "$0")" && pwd)
STAMP="$PREFIX/installed-package-lock.json"

cmp -s "$STAMP" "$HERE/npm/package-lock.json" && exit 0
mkdir -p "$PREFIX"
rm -f "$STAMP"
cp "$HERE/npm/package.json" "$HERE/npm/package-lock.json" "$PREFIX/"
(cd "$PREFIX" && npm ci --silent --no-audit --no-fund)
cp "$HERE/npm/package-lock.json" "$STAMP"
