#!/usr/bin/env bash
# One matrix cell: rebase SERIES onto REF, validate it in the pinned image, append the outcome
# to the ledger, write the step summary. A failed cell fails only its own job.
#   ci/run-cell.sh REPO SERIES TARGET REF [--force|--retry]...
set -euo pipefail
repo=${1:?usage: ci/run-cell.sh REPO SERIES TARGET REF [--force|--retry]...}
series=${2:?series}
target=${3:?target}
ref=${4:?ref}
shift 4
args=()
for a in "$@"; do [ -n "$a" ] && args+=("$a"); done
exec python3 -m carry ci run "$series" "$target" --ref "$ref" --repo "$repo" \
  --engine "${CARRY_ENGINE:-docker}" --ledger "${CARRY_LEDGER:-carry-ledger.json}" \
  --out carry-out "${args[@]}"
