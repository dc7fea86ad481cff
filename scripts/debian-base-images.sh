#!/bin/sh
# debian-base-images.sh CACHE_DIR — makes the Dockerfile's base images,
# debian:bookworm and debian:bookworm-slim, in podman's local storage from
# Debian's own archive, for machines with no container registry: a minbase
# debootstrap, imported under both names (docker.io/library/debian:...).
# The root filesystem is kept as CACHE_DIR/bookworm-minbase.tar, so a later
# run only imports it; images podman already has are left alone.
# Needs root (debootstrap), debootstrap and podman.
set -eu
CACHE=${1:?usage: debian-base-images.sh CACHE_DIR}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
TARBALL="$CACHE/bookworm-minbase.tar"

missing=""
for tag in bookworm bookworm-slim; do
  podman image exists "docker.io/library/debian:$tag" || missing="$missing $tag"
done
[ -z "$missing" ] && exit 0

if [ ! -s "$TARBALL" ]; then
  mkdir -p "$CACHE"
  rootfs="$CACHE/rootfs.tmp"
  rm -rf "$rootfs"
  echo "debian-base-images: debootstrap bookworm (minbase) from $MIRROR" >&2
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
  # what the official images drop: apt's downloaded lists and packages
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -cf "$TARBALL.tmp" . && mv "$TARBALL.tmp" "$TARBALL"
  rm -rf "$rootfs"
fi
for tag in $missing; do
  podman import --quiet --change 'CMD ["bash"]' "$TARBALL" "docker.io/library/debian:$tag" >/dev/null
  echo "debian-base-images: imported debian:$tag" >&2
done
