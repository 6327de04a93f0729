#!/usr/bin/env bash
# The matrix job's first step: print the pending cells as GitHub outputs `matrix` and `any`,
# and pass the workflow's CARRY_LOOP opt-in on as `loop` (a job's `if:` cannot read env).
# With the loop on (and CARRY_DASHBOARD not false) it reads the dashboard's boxes, never
# writing it: a paused series gets no cell, a ticked retry (`flag: --retry`) and a cell whose
# PR or issue waits for room (`flag: --force`) run again whatever the ledger holds.
#   ci/plan.sh REPO [--force]
set -euo pipefail
repo=${1:?usage: ci/plan.sh REPO [--force]}
shift
args=()
for a in "$@"; do [ -n "$a" ] && args+=("$a"); done
if [ "${CARRY_LOOP:-false}" = true ] && [ "${CARRY_DASHBOARD:-true}" = true ]; then
  args+=(--dashboard)
fi
matrix=$(python3 -m carry ci matrix --repo "$repo" --ledger "${CARRY_LEDGER:-carry-ledger.json}" "${args[@]}")
any=false
case "$matrix" in *'"series"'*) any=true ;; esac
echo "cells: $matrix"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  { echo "matrix=$matrix"; echo "any=$any"; echo "loop=${CARRY_LOOP:-false}"; } >> "$GITHUB_OUTPUT"
fi
