#!/usr/bin/env bash
# Fold the ledgers the cells uploaded (DIR/cell-*/carry-ledger.json) into the one the
# workflow caches for the next run.
#   ci/record.sh DIR
set -euo pipefail
dir=${1:?usage: ci/record.sh DIR}
shopt -s nullglob
cells=("$dir"/*/carry-ledger.json)
if [ "${#cells[@]}" -eq 0 ]; then
  echo "record: no cell uploaded a ledger" >&2
  exit 0
fi
python3 -m carry ci merge-ledger --ledger "${CARRY_LEDGER:-carry-ledger.json}" "${cells[@]}"
