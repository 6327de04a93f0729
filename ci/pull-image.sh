#!/usr/bin/env bash
# Pull the series' test image by its digest, and nothing else: carry runs it with
# --pull=never, so a tag that moved upstream can never change what the tests ran in.
#   ci/pull-image.sh SERIES [ENGINE]
set -euo pipefail
series=${1:?usage: ci/pull-image.sh SERIES [ENGINE]}
engine=${2:-docker}
image=$(python3 -m carry series show "$series" --json \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["test"]["image"])')
case "$image" in
  *@sha256:*) ;;
  "") echo "pull-image: series $series has no [test].image; nothing to pull" >&2; exit 0 ;;
  *) echo "pull-image: $image is not pinned by digest (NAME@sha256:...)" >&2; exit 2 ;;
esac
"$engine" pull --quiet "$image"
