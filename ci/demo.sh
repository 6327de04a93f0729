#!/usr/bin/env bash
# carry's self-contained demo: build a small upstream and fork in a temporary folder, then
# import the fork's series, check it against its trailer policy, and apply it back onto the
# upstream base, all through the real CLI. Exits non-zero on any unexpected result.
#   pip install -e '.[dev]' && bash ci/demo.sh
set -euo pipefail

work=$(mktemp -d "${TMPDIR:-/tmp}/carry-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_PAGER=cat
export GIT_COMMITTER_NAME="C O Mitter" GIT_COMMITTER_EMAIL="committer@example.com"
mkdir -p "$HOME"
carry() { python -m carry "$@"; }
fail() { echo "demo: FAILED: $*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }

# commit AUTHOR EMAIL MESSAGE FILE CONTENT: one commit with an exact author, an hour apart.
clock=1790000000
commit() {
  printf '%b' "$5" > "$4" && git add "$4"
  clock=$((clock + 3600))
  GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2" GIT_AUTHOR_DATE="@$clock ${TZ_OFFSET:-+0000}" \
    git commit -q -m "$3"
}

step "upstream: a small project, tagged v1.0"
git init -q -b main "$work/upstream" && cd "$work/upstream"
mkdir -p vllm/core
commit "A U Thor" author@example.com "Initial import" vllm/core/cache.py \
  'def boundaries(n):\n    return [n]\n'
git tag v1.0

step "fork: a four-patch series like the flagship"
git clone -q "$work/upstream" "$work/fork" && cd "$work/fork"
git checkout -q -b dev
TZ_OFFSET=-0700
commit "Toby Mao" toby@example.com "[BugFix] Keep a state below each boundary

Signed-off-by: Toby Mao <toby@example.com>" vllm/core/cache.py \
  'def boundaries(n):\n    return [n - 1, n]\n'
commit "Toby Mao" toby@example.com "[BugFix] Rename to get_replay_boundaries

Signed-off-by: Toby Mao <toby@example.com>" vllm/core/cache.py \
  'def get_replay_boundaries(n):\n    return [n - 1, n]\n'
TZ_OFFSET=+0200
commit "logprobz" logprobz@example.com "Retain both EAGLE-reachable positions

Published without trailers." vllm/core/eagle.py 'REACHABLE = 2\n'
commit "logprobz" logprobz@example.com "Pass the lookup alignment into the masks

Assisted-by: OpenAI Codex
Signed-off-by: logprobz <logprobz@example.com>" vllm/core/masks.py 'ALIGN = 16\n'

step "the series manifest: policy, the recorded exception, what is expected"
series="$work/series"
mkdir -p "$series/demo"
cat > "$series/demo/series.toml" <<'EOF'
schema = 1
name = "demo"
title = "Replay boundaries under EAGLE/MTP"

[upstream]
repo = "example/upstream"

[base]
ref = "origin/main"

[policy]
required = ["Signed-off-by"]
ai_attribution = "Assisted-by"

[[policy.exception]]
patch = 3
trailers = ["Signed-off-by"]
reason = "published without trailers; left unamended to preserve published history"

[[expect]]
patch = 1
author = "Toby Mao"

[[expect]]
patch = 4
author = "logprobz"
trailers = ["Assisted-by: OpenAI Codex", "Signed-off-by"]
EOF
export CARRY_SERIES_DIR="$series"
carry check demo | grep -F "patches not imported yet: 2 expected" >/dev/null || fail "check before import"

step "carry import demo --repo fork --branch dev"
carry import demo --repo "$work/fork" --branch dev
ls "$series/demo/patches"
[ "$(ls "$series/demo/patches" | wc -l)" -eq 4 ] || fail "expected 4 patch files"
before=$(cd "$series" && find . -type f -exec sha1sum {} + | sort)
carry import demo --repo "$work/fork" --branch dev | grep -F "unchanged at v1" >/dev/null \
  || fail "re-import changed the series"
[ "$before" = "$(cd "$series" && find . -type f -exec sha1sum {} + | sort)" ] \
  || fail "re-import changed a byte"

step "carry check demo --against-repo fork"
carry check demo --against-repo "$work/fork"
carry check demo --json > "$work/check.json"
python - "$work/check.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "ok", r["status"]
kinds = [[f["kind"] for f in p["findings"]] for p in r["patches"]]
assert kinds == [[], [], ["exception"], []], kinds
EOF

step "carry apply demo --onto v1.0 --branch carried (no worktree touched)"
git -C "$work/upstream" fetch -q "$work/fork" dev:fork-dev
carry apply demo --repo "$work/upstream" --onto v1.0 --branch carried
cd "$work/upstream"
git log --format='%h %an <%ae> %ad%n    %s%n%w(0,4,4)%(trailers:only)' --date=iso v1.0..carried
[ "$(git rev-parse carried^{tree})" = "$(git rev-parse fork-dev^{tree})" ] || fail "tree"
[ "$(git log --format='%an|%ae|%ad|%B' carried)" = \
  "$(git log --format='%an|%ae|%ad|%B' fork-dev)" ] || fail "authors, dates or messages"
[ "$(git log -1 --format='%cn' carried)" = "C O Mitter" ] || fail "committer"
[ "$(git symbolic-ref --short HEAD)" = main ] && [ -z "$(git status --porcelain)" ] \
  || fail "worktree touched"
if carry apply demo --repo "$work/upstream" --onto v1.0 --branch carried 2>/dev/null; then
  fail "apply moved an existing branch without --force"
fi

step "demo: OK"
