#!/usr/bin/env bash
# Close the loop on the cells' results (DIR/cell-*/carry-out/summary.json): refresh and open
# or update each series' PR on a clean release or dev target, open, update or close one
# tracking issue per (series, target) (a conflict, or failing tests), and keep the dashboard
# issue (unless CARRY_DASHBOARD=false), whose boxes it reads back. At most CARRY_OPEN_LIMIT
# PRs and issues are opened per run (unset: no limit). The only step that writes to GitHub;
# the token comes from $GH_TOKEN, and carry hands it to its own `git push` and `git ls-remote`
# through their environment only, never through a file or argv.
#   ci/loop.sh REPO DIR [--dry-run]
set -euo pipefail
repo=${1:?usage: ci/loop.sh REPO DIR [--dry-run]}
dir=${2:?usage: ci/loop.sh REPO DIR [--dry-run]}
shift 2
args=()
for a in "$@"; do [ -n "$a" ] && args+=("$a"); done
if [ "${CARRY_DASHBOARD:-true}" = true ]; then args+=(--dashboard); fi
if [ -n "${CARRY_OPEN_LIMIT:-}" ]; then args+=(--open-limit "$CARRY_OPEN_LIMIT"); fi
summaries=()
if [ -d "$dir" ]; then
  mapfile -t summaries < <(find "$dir" -path '*/carry-out/summary.json' | sort -V)
fi
if [ "${#summaries[@]}" -eq 0 ] && [ "${CARRY_DASHBOARD:-true}" != true ]; then
  echo "loop: no cell uploaded a summary" >&2
  exit 0
fi
exec python3 -m carry ci loop "${summaries[@]}" --repo "$repo" --open-pr --track-issues \
  --out carry-loop "${args[@]}"
