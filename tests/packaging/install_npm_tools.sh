#!/bin/sh
# install_npm_tools.sh PREFIX [PACKAGE_DIR] — installs the pinned npm packages
# of PACKAGE_DIR (its package.json and package-lock.json; default
# tests/packaging/npm, the linters and validators) into PREFIX with `npm ci`,
# unless PREFIX already holds a finished install of exactly that lock file.
set -eu
PREFIX=${1:?usage: install_npm_tools.sh PREFIX [PACKAGE_DIR]}
HERE=$(cd "$(dirname "$0")" && pwd)
PACKAGE_DIR=${2:-$HERE/npm}
STAMP="$PREFIX/installed-package-lock.json"

cmp -s "$STAMP" "$PACKAGE_DIR/package-lock.json" && exit 0
mkdir -p "$PREFIX"
rm -f "$STAMP"
cp "$PACKAGE_DIR/package.json" "$PACKAGE_DIR/package-lock.json" "$PREFIX/"
(cd "$PREFIX" && npm ci --silent --no-audit --no-fund)
cp "$PACKAGE_DIR/package-lock.json" "$STAMP"
