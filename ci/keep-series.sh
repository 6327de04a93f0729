#!/usr/bin/env bash
# Keep what the loop wrote: a refresh writes the series' next version into series/ (and tags
# it series/NAME/vN) on the runner. Commit it and push it, with its tags, to the branch this
# workflow runs on (or $CARRY_KEEP_BRANCH), so the next run starts from the new version.
# One retry after a rebase if the branch moved meanwhile. Nothing to keep: nothing happens.
#   ci/keep-series.sh [--dry-run]
set -euo pipefail
if [ "${1:-}" = "--dry-run" ]; then
  git status --porcelain -- series/
  exit 0
fi
git add -A -- series/ ':!series/.*.lock'  # new and removed patch files too; never a lock file
if git diff --cached --quiet -- series/; then
  echo "keep-series: series/ unchanged"
  exit 0
fi
branch=${CARRY_KEEP_BRANCH:-${GITHUB_REF_NAME:-$(git symbolic-ref --short HEAD)}}
bot=(-c user.name="carry bot" -c user.email="carry-bot@users.noreply.github.com")
# The checkout keeps no credentials (persist-credentials: false): the token reaches git push
# through its environment for these commands only, never .git/config or the command line.
if [ -n "${GH_TOKEN:-}" ]; then
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.https://github.com/.extraheader
  GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $(printf 'x-access-token:%s' "$GH_TOKEN" | base64 -w0)"
  export GIT_CONFIG_VALUE_0
fi
git "${bot[@]}" commit -q -m "series: refreshed by the carry CI loop" -- series/
for attempt in 1 2; do
  if git push -q origin "HEAD:refs/heads/$branch" && git push -q origin 'refs/tags/series/*'; then
    echo "keep-series: pushed $(git rev-parse --short HEAD) to $branch"
    exit 0
  fi
  [ "$attempt" = 2 ] && break
  git fetch -q origin "$branch"
  git "${bot[@]}" rebase -q FETCH_HEAD
done
echo "keep-series: could not push to $branch" >&2
exit 1
