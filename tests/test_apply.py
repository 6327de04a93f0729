"""`carry apply`: commits without a worktree, one ref update, exact authorship."""

from __future__ import annotations

import json
from pathlib import Path

from carry.git import Ident, Repo
from carry.intake import importer
from carry.replay.chain import materialize
from carry.series import patches
from carry.series import store as seriesmod
from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, run_carry


def _series(upstream: CommitBuilder, root: Path) -> seriesmod.Series:
    upstream.commit("First\n", {"a": "1\n"}, author=TOBY)
    upstream.commit("Second\n\nSigned-off-by: logprobz <logprobz@example.com>\n", {"a": "2\n"},
                    author=LOGPROBZ)
    importer.run(root, "demo", importer.Source(str(upstream.path), range="base..HEAD"))
    return seriesmod.find(root, "demo")


def test_apply_json(upstream: CommitBuilder, series_root: Path) -> None:
    _series(upstream, series_root)
    r = run_carry("apply", "demo", "--repo", str(upstream.path), "--onto", "base",
                  "--branch", "carried", "--json", "--series-dir", str(series_root))
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["branch"] == "refs/heads/carried"
    assert data["onto"] == upstream.rev("base")
    assert [(p["subject"], p["author"]) for p in data["patches"]] == [
        ("First", "Toby Mao"), ("Second", "logprobz")]
    assert data["head"] == upstream.rev("carried") == data["patches"][-1]["commit"]
    assert r.err == ""  # no progress noise when stderr is not a terminal


def test_fixed_committer_makes_apply_deterministic(upstream: CommitBuilder,
                                                    series_root: Path) -> None:
    """What a cache of replayed series relies on: same input, same commit ids."""
    s = _series(upstream, series_root)
    repo = Repo.open(upstream.path)
    bot = Ident("carry", "carry@localhost", "1790000000 +0000")
    plist = [patches.load(p.path, p.number) for p in s.patches()]
    base = repo.rev_parse("base")
    first = materialize(repo, plist, base, bot)
    again = materialize(repo, plist, base, bot)
    assert first == again
    assert git(upstream.path, "log", "-1", "--format=%cn <%ce> %cd", "--date=raw",
               first[-1]) == "carry <carry@localhost> 1790000000 +0000"
    assert git(upstream.path, "rev-parse", f"{first[-1]}^{{tree}}") == git(
        upstream.path, "rev-parse", "HEAD^{tree}")


def test_apply_in_a_bare_repository(upstream: CommitBuilder, series_root: Path,
                                    tmp_path: Path) -> None:
    _series(upstream, series_root)
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(upstream.path), str(bare))
    r = run_carry("apply", "demo", "--repo", str(bare), "--onto", "base", "--branch",
                  "refs/heads/carried", "--series-dir", str(series_root))
    assert r.code == 0, r.err
    assert git(bare, "rev-parse", "carried^{tree}") == git(upstream.path, "rev-parse",
                                                           "HEAD^{tree}")


def test_a_branch_and_a_branch_under_its_name_clash_in_one_line(upstream: CommitBuilder,
                                                                 series_root: Path) -> None:
    """F16 #10: git keeps `carry/demo` and `carry/demo/base` apart as a file and a folder;
    after `carry edit` wrote `carry/demo/base`, `apply --branch carry/demo` died with git's
    "cannot lock ref". Both ways round are refused before any work, in one line with a
    hint, and nothing is written."""
    _series(upstream, series_root)
    git(upstream.path, "branch", "carry/demo/base", "base")
    before = git(upstream.path, "for-each-ref")
    r = run_carry("apply", "demo", "--repo", str(upstream.path), "--onto", "base",
                  "--branch", "carry/demo", "--series-dir", str(series_root))
    assert r.code == 2, r.err
    [line] = r.err.splitlines()
    assert "'carry/demo/base' exists" in line and "cannot lock" not in line
    assert "--branch" in line and "carry/demo/tip" in line
    assert git(upstream.path, "for-each-ref") == before
    git(upstream.path, "branch", "-D", "carry/demo/base")
    git(upstream.path, "branch", "carry/demo", "base")
    before = git(upstream.path, "for-each-ref")
    r = run_carry("apply", "demo", "--repo", str(upstream.path), "--onto", "base",
                  "--branch", "carry/demo/upstream-main", "--series-dir", str(series_root))
    assert r.code == 2, r.err
    [line] = r.err.splitlines()
    assert "'carry/demo' exists" in line and "git branch -m carry/demo carry/demo/tip" in line
    assert git(upstream.path, "for-each-ref") == before
