#!/usr/bin/env bash
# carry's self-contained demo, and the CI job on an embedded default. It builds a small
# upstream and a fork in a temporary folder, then, through the real CLI:
#   import the fork's series, check it against its trailer policy, apply it back onto the
#   upstream base; then upstream moves (a release squash-merges two of the patches), and the
#   CI job (ci/validate-series.sh) rebases onto every target, drops what upstream has, and
#   validates each result: pytest suites, pre-commit hooks (with a hook id that upstream
#   renamed, mapped by a fallback) and git diff --check, with the local engine.
# Exits non-zero on any unexpected result.
#   python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' && bash ci/demo.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/carry-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The job's summary.json and summary.md (what a CI run publishes) go in $CARRY_DEMO_OUT when
# it is set, and stay there; otherwise they are removed with everything else the demo made.
out=${CARRY_DEMO_OUT:-$work/out}
mkdir -p "$out"
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_PAGER=cat
export GIT_COMMITTER_NAME="C O Mitter" GIT_COMMITTER_EMAIL="committer@example.com"
export GIT_AUTHOR_NAME="A U Thor" GIT_AUTHOR_EMAIL="author@example.com"
mkdir -p "$HOME"
python=$(command -v python3)
carry() { "$python" -m carry "$@"; }
fail() { echo "demo: FAILED: $*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }

# commit AUTHOR EMAIL MESSAGE FILE < CONTENT: one commit with an exact author, an hour apart.
clock=1790000000
commit() {
  mkdir -p "$(dirname "$4")" && cat > "$4" && git add "$4"
  clock=$((clock + 3600))
  GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2" GIT_AUTHOR_DATE="@$clock ${TZ_OFFSET:-+0000}" \
    git commit -q -m "$3"
}

step "upstream: a small project with a test suite and pre-commit hooks, tagged v1.0"
git init -q -b main "$work/upstream" && cd "$work/upstream"
commit "A U Thor" author@example.com "Initial import" vllm/core/cache.py <<'PY'
def boundaries(n):
    return [n]
PY
commit "A U Thor" author@example.com "Add tests" tests/test_cache.py <<'PY'
from vllm.core.cache import boundaries


def test_last_boundary():
    assert boundaries(64)[-1] == 64
PY
commit "A U Thor" author@example.com "Add hooks" .pre-commit-config.yaml <<'YAML'
repos:
  - repo: local
    hooks:
      - id: no-tabs
        name: no tabs
        entry: "\t"
        language: pygrep
        types: [python]
      - id: compile-3.12
        name: byte-compile
        entry: python -m py_compile
        language: system
        types: [python]
        stages: [manual]
YAML
git tag v1.0

step "fork: a four-patch series like the flagship"
git clone -q "$work/upstream" "$work/fork" && cd "$work/fork"
git checkout -q -b dev
TZ_OFFSET=-0700
commit "Toby Mao" toby@example.com "[BugFix] Keep a state below each boundary

Signed-off-by: Toby Mao <toby@example.com>" vllm/core/cache.py <<'PY'
def boundaries(n):
    return [n - 1, n]
PY
commit "Toby Mao" toby@example.com "[BugFix] Test the state below the boundary

Signed-off-by: Toby Mao <toby@example.com>" tests/test_below.py <<'PY'
from vllm.core.cache import boundaries


def test_state_below_the_boundary():
    assert boundaries(64) == [63, 64]
PY
TZ_OFFSET=+0200
commit "logprobz" logprobz@example.com "Retain both EAGLE-reachable positions

Published without trailers." vllm/core/eagle.py <<'PY'
REACHABLE = 2
PY
commit "logprobz" logprobz@example.com "Pass the lookup alignment into the masks

Assisted-by: OpenAI Codex
Signed-off-by: logprobz <logprobz@example.com>" vllm/core/masks.py <<'PY'
ALIGN = 16
PY

step "the series manifest: policy, exception, expectations, provenance, targets, test plan"
series="$work/series"
mkdir -p "$series/demo"
cat > "$series/demo/series.toml" <<EOF
schema = 1
name = "demo"
title = "Replay boundaries under EAGLE/MTP"

[upstream]
repo = "example/upstream"
remote = "origin"

[base]
ref = "origin/main"

[[target]]
name = "upstream-main"
ref = "origin/main"

[[target]]
name = "upstream-release"
tags = "v*"

[[provenance]]
pr = "example/upstream#123"
role = "upstream-equivalent"
state = "merged"
patches = [1, 2]

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

[test]
python = "$python"
pytest_args = ["-q", "-p", "no:cacheprovider"]
suites = ["tests"]
diff_check = true

[[test.hook]]

[[test.hook]]
id = "compile-3.12"
stage = "manual"
fallback = "compile"
EOF
export CARRY_SERIES_DIR="$series"
carry check demo | grep -F "patches not imported yet: 2 expected" >/dev/null || fail "check before import"

step "carry import demo --repo fork --branch dev"
carry import demo --repo "$work/fork" --branch dev
[ "$(find "$series/demo/patches" -name "*.patch" | wc -l)" -eq 4 ] || fail "expected 4 patch files"
before=$(cd "$series" && find . -type f -exec sha1sum {} + | sort)
carry import demo --repo "$work/fork" --branch dev | grep -F "unchanged at v1" >/dev/null \
  || fail "re-import changed the series"
[ "$before" = "$(cd "$series" && find . -type f -exec sha1sum {} + | sort)" ] \
  || fail "re-import changed a byte"

step "carry check demo --against-repo fork"
carry check demo --against-repo "$work/fork"
carry check demo --json > "$work/check.json"
"$python" - "$work/check.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "ok", r["status"]
kinds = [[f["kind"] for f in p["findings"]] for p in r["patches"]]
assert kinds == [[], [], ["exception"], []], kinds
PY

step "carry apply demo --onto v1.0 --branch carried (no worktree touched)"
git -C "$work/upstream" fetch -q "$work/fork" dev:fork-dev
carry apply demo --repo "$work/upstream" --onto v1.0 --branch carried
cd "$work/upstream"
git log --format='%h %an <%ae> %ad%n    %s%n%w(0,4,4)%(trailers:only)' --date=iso v1.0..carried
[ "$(git rev-parse 'carried^{tree}')" = "$(git rev-parse 'fork-dev^{tree}')" ] || fail "tree"
[ "$(git log --format='%an|%ae|%ad|%B' carried)" = \
  "$(git log --format='%an|%ae|%ad|%B' fork-dev)" ] || fail "authors, dates or messages"
[ "$(git log -1 --format='%cn' carried)" = "C O Mitter" ] || fail "committer"
[ "$(git symbolic-ref --short HEAD)" = main ] && [ -z "$(git status --porcelain)" ] \
  || fail "worktree touched"
carry apply demo --repo "$work/upstream" --onto v1.0 --branch carried >/dev/null \
  || fail "apply refused to move the branch it wrote itself"
git branch -q someones-work v1.0
if carry apply demo --repo "$work/upstream" --onto v1.0 --branch someones-work 2>/dev/null; then
  fail "apply moved a branch carry did not write, without --force"
fi

step "upstream moves: v1.1 squash-merges patches 1-2 as #123 and renames a hook id"
git checkout -q main && git branch -q -D carried fork-dev someones-work
commit "A U Thor" author@example.com "Keep the state below each boundary (#123)" \
  vllm/core/cache.py <<'PY'
def boundaries(n):
    """Every position an EAGLE lookup can reach."""
    return [n - 1, n]
PY
commit "A U Thor" author@example.com "Test the state below the boundary (#123)" \
  tests/test_below.py <<'PY'
from vllm.core.cache import boundaries


def test_state_below_the_boundary():
    assert boundaries(64) == [63, 64]
PY
sed -i 's/compile-3.12/compile/' .pre-commit-config.yaml
git commit -q -am "Rename the manual hook to compile"
git tag v1.1
git -C "$work/fork" fetch -q --tags origin

step "the CI job: bash ci/validate-series.sh --repo fork --engine local"
rc=0
bash "$here/validate-series.sh" --repo "$work/fork" --engine local --out "$out" || rc=$?
[ "$rc" -eq 0 ] || fail "the CI job exited $rc"
"$python" - "$out/summary.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
assert job["status"] == "passed", job["status"]
rows = {r["target"]: r for r in job["rows"]}
assert sorted(rows) == ["upstream-main", "upstream-release@v1.1"], sorted(rows)
for row in rows.values():
    # Both targets are the same commit here, so the second validation is already cached.
    assert row["rebase"] == "applied" and row["validate"].endswith("passed"), row
    assert row["applied"] == 2 and len(row["dropped"]) == 2, row
    assert all("#123" in d for d in row["dropped"]), row["dropped"]
    assert "tests passed" in row["summary"], row["summary"]
assert rows["upstream-main"]["validate"] == "passed", rows["upstream-main"]
PY

step "one validation in full: the renamed hook id runs through its declared fallback"
carry validate demo --repo "$work/fork" --onto v1.1 --engine local | tee "$work/validate.txt"
grep -F "used the declared fallback 'compile'" "$work/validate.txt" >/dev/null \
  || fail "the hook fallback was not reported"

step "the same job again: nothing moved, so every validation is cached"
bash "$here/validate-series.sh" --repo "$work/fork" --engine local --out "$out" \
  | tee "$work/again.txt"
[ "$(grep -c "cached passed" "$work/again.txt")" -eq 2 ] || fail "the second run was not cached"
"$python" - "$out/summary.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
assert [r["validate"] for r in job["rows"]] == ["cached passed"] * 2, job["rows"]
PY
if [ -n "${CARRY_DEMO_OUT:-}" ]; then
  echo "summary kept: $out/summary.md (and summary.json)"
else
  cat "$out/summary.md"
  echo "(set CARRY_DEMO_OUT=DIR to keep summary.md and summary.json)"
fi

step "demo: OK"
