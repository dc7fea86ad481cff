#!/bin/sh
# debian-base-images.sh CACHE_DIR — makes the Dockerfile's base images,
# debian:bookworm and debian:bookworm-slim, in podman's local storage from
# Debian's own archive, for machines with no container registry: a minbase
# debootstrap, set up the way the official images are (debuerreotype's
# minimizing config and slimify step), so that an image built on them is as
# large as one built on the registry's:
#   both   apt keeps neither its package caches (pkgcache.bin and
#          srcpkgcache.bin, some 80 MB) nor the downloaded .debs after an
#          install, fetches no translations, and installs start no services;
#   -slim  no documentation, manual pages or message translations (copyright
#          files kept), removed now and excluded from later installs.
# The debootstrap root is kept as CACHE_DIR/bookworm-minbase.tar, so a later
# run only sets up and imports it. Images made by this recipe (the label
# org.lmscore.base-recipe) are left alone, ones an older recipe imported are
# replaced, and images pulled from a registry are never touched.
# Needs root (debootstrap), debootstrap and podman.
set -eu
CACHE=${1:?usage: debian-base-images.sh CACHE_DIR}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
TARBALL="$CACHE/bookworm-minbase.tar"
RECIPE=2

made_here() { # image: imported from a tarball, as this script does
  [ "$(podman image inspect --format '{{.Comment}}' "$1")" = "imported from tarball" ]
}

missing=""
for tag in bookworm bookworm-slim; do
  image="docker.io/library/debian:$tag"
  if podman image exists "$image"; then
    made_here "$image" || continue
    recipe=$(podman image inspect --format '{{index .Labels "org.lmscore.base-recipe"}}' "$image")
    [ "$recipe" = "$RECIPE" ] && continue
  fi
  missing="$missing $tag"
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

# The container settings of both images.
minimize() {
  root=$1
  printf '#!/bin/sh\n# installs in an image build start no services\nexit 101\n' \
    >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
  clean='"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true";'
  cat >"$root/etc/apt/apt.conf.d/docker-clean" <<EOF
// An image layer keeps whatever an install leaves: no package caches, no .debs.
DPkg::Post-Invoke { $clean };
APT::Update::Post-Invoke { $clean };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'Acquire::GzipIndexes "true";' >"$root/etc/apt/apt.conf.d/docker-gzip-indexes"
  echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
  echo 'Apt::AutoRemove::SuggestsImportant "false";' \
    >"$root/etc/apt/apt.conf.d/docker-autoremove-suggests"
}

# The slim variant: what dpkg leaves out of this image and every install on it.
EXCLUDED="/usr/share/doc /usr/share/groff /usr/share/info /usr/share/linda
 /usr/share/lintian/overrides /usr/share/locale /usr/share/man"
slimify() {
  root=$1
  {
    for dir in $EXCLUDED; do echo "path-exclude $dir/*"; done
    echo "path-include /usr/share/doc/*/copyright"
    echo "path-include /usr/share/locale/locale.alias"
  } >"$root/etc/dpkg/dpkg.cfg.d/docker"
  for dir in $EXCLUDED; do
    [ -d "$root$dir" ] || continue
    find "$root$dir" -mindepth 1 ! -type d ! -path "$root/usr/share/doc/*/copyright" \
      ! -path "$root/usr/share/locale/locale.alias" -delete
    find "$root$dir" -mindepth 1 -depth -type d -empty -delete
  done
}

for tag in $missing; do
  root="$CACHE/$tag.tmp"
  rm -rf "$root" && mkdir -p "$root"
  tar -C "$root" -xf "$TARBALL"
  minimize "$root"
  [ "$tag" = bookworm-slim ] && slimify "$root"
  tar -C "$root" -cf "$root.tar" .
  podman import --quiet --change 'CMD ["bash"]' \
    --change "LABEL org.lmscore.base-recipe=$RECIPE" "$root.tar" \
    "docker.io/library/debian:$tag" >/dev/null
  rm -rf "$root" "$root.tar"
  echo "debian-base-images: imported debian:$tag" >&2
done
