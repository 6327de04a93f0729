#!/usr/bin/env bash
# The matrix job's first step: print the pending cells as GitHub outputs `matrix` and `any`,
# and pass the workflow's CARRY_LOOP opt-in on as `loop` (a job's `if:` cannot read env).
#   ci/plan.sh REPO [--force]
set -euo pipefail
repo=${1:?usage: ci/plan.sh REPO [--force]}
shift
args=()
for a in "$@"; do [ -n "$a" ] && args+=("$a"); done
matrix=$(python3 -m carry ci matrix --repo "$repo" --ledger "${CARRY_LEDGER:-carry-ledger.json}" "${args[@]}")
any=false
case "$matrix" in *'"series"'*) any=true ;; esac
echo "cells: $matrix"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  { echo "matrix=$matrix"; echo "any=$any"; echo "loop=${CARRY_LOOP:-false}"; } >> "$GITHUB_OUTPUT"
fi
