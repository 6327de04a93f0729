#!/usr/bin/env bash
# The CI job: rebase every carried series onto every target in its manifest (upstream main,
# the newest release tags, the fork's dev branch), validate each result in the pinned
# container, and write summary.json / summary.md (and $GITHUB_STEP_SUMMARY on GitHub).
#
#   ci/validate-series.sh --repo PATH [--engine docker|podman|local] [--series NAME]...
#                         [--target NAME]... [--onto REF]... [--fetch] [--out DIR]
#
# PATH is a clone of the fork with remotes named as in each manifest ([upstream].remote and
# [fork].remote). Exit 0 when every target applied and passed, 1 otherwise, 2 on bad input.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CARRY_SERIES_DIR="${CARRY_SERIES_DIR:-$here/../series}"
exec python3 -m carry ci "$@"
