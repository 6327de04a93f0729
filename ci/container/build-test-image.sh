#!/usr/bin/env bash
# Build carry's container test image from a local root filesystem, without any registry:
# debootstrap (minbase bookworm: python3, python3-venv, git), a venv at /opt/venv with pytest
# and pre-commit from wheels fetched on the host, then `podman import`.
# Idempotent: the rootfs and the image are cached; a second run only prints the reference.
# The last line of output is always NAME@sha256:DIGEST, the only form carry accepts.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
cache="${CARRY_IMAGE_CACHE:-/var/cache/carry-test-image}"
# Bump when the recipe changes: the tag names the recipe, the digest names the bytes.
recipe=1
name="localhost/carry-test"
tag="$name:r$recipe"
mirror="${CARRY_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
log() { echo "build-test-image: $*" >&2; }

digest() { podman image inspect --format '{{.Digest}}' "$tag" 2>/dev/null; }

if d=$(digest) && [ -n "$d" ]; then
  log "cached image $tag"
  echo "$name@$d"
  exit 0
fi

rootfs="$cache/rootfs-r$recipe"
mkdir -p "$cache"
if [ ! -e "$rootfs/.carry-complete" ]; then
  rm -rf "$rootfs" "$rootfs.tmp"
  log "debootstrap bookworm into $rootfs (minbase + python3, python3-venv, git)"
  debootstrap --variant=minbase --include=python3,python3-venv,git \
    bookworm "$rootfs.tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 \
    || { tail -n 20 "$cache/debootstrap.log" >&2; exit 1; }
  log "wheels for pytest and pre-commit (host pip, the ordinary registry client)"
  wheels="$rootfs.tmp/tmp/wheels"
  mkdir -p "$wheels"
  python3 -m pip download -q --only-binary=:all: --python-version 3.11 \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform any \
    -d "$wheels" pytest pre-commit
  log "venv at /opt/venv"
  in_root() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 chroot "$rootfs.tmp" "$@"; }
  in_root /usr/bin/python3 -m venv /opt/venv
  in_root /opt/venv/bin/python -m pip install -q --no-index \
    --disable-pip-version-check --find-links /tmp/wheels pytest pre-commit
  rm -rf "$wheels" "$rootfs.tmp/var/cache/apt/archives/"*.deb "$rootfs.tmp/var/lib/apt/lists/"*
  in_root /opt/venv/bin/python -m pytest --version >&2
  in_root /opt/venv/bin/pre-commit --version >&2
  touch "$rootfs.tmp/.carry-complete"
  mv "$rootfs.tmp" "$rootfs"
fi

log "podman import $tag"
tar -C "$rootfs" --exclude=./.carry-complete -c . \
  | podman import --change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      - "$tag" >/dev/null
d=$(digest)
[ -n "$d" ] || { log "podman import gave no digest"; exit 1; }
echo "$name@$d"
