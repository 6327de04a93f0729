"""A conflict worktree where the user looks, a `carry/...` branch that someone moved is never
overwritten, and a conflict that is a squash merge without provenance says so."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import CommitBuilder, git, run_carry, util


def _series(up: CommitBuilder, series_root: Path, upstream_subject: str) -> tuple[str, ...]:
    sd = ("--series-dir", str(series_root))
    assert run_carry("init", "demo", "--upstream", "acme/widget", "--fork", "me/widget",
                     "--base", "base", *sd).code == 0
    git(up.path, "checkout", "-q", "-b", "feature", "base")
    up.commit("Fix the h10 boundary", {"src/util.py": util(h10=100)})
    up.checkout("main")
    up.commit(upstream_subject, {"src/util.py": util(h10=101)})
    assert run_carry("import", "demo", "--repo", str(up.path), "--range", "base..feature",
                     *sd).code == 0
    return ("rebase", "demo", "--repo", str(up.path), "--onto", "main", *sd)


def test_squash_hint_and_visible_worktree(upstream: CommitBuilder, series_root: Path) -> None:
    args = _series(upstream, series_root, "Fix the h10 boundary (#123)")
    stop = run_carry(*args)
    assert stop.code == 1, stop.err
    squash = upstream.rev("main")
    hint = next(ln for ln in stop.out.splitlines() if "hint:" in ln)
    assert f'upstream {squash[:12]} "Fix the h10 boundary (#123)"' in hint
    assert ('[[provenance]] pr = "acme/widget#123", role = "upstream-equivalent", '
            f'patches = [1], merged_as = "{squash[:12]}"') in hint
    assert run_carry(*args[:4], "--resolve", *args[6:]).code == 1  # makes the worktree
    [d] = json.loads(run_carry("status", "demo", "--repo", str(upstream.path), "--json",
                               "--series-dir", str(series_root)).out)["series"][0]["stopped"]
    wt = Path(d["worktree"])
    assert wt == upstream.path.parent / "upstream.carry" / "demo" / "main" and wt.is_dir()
    assert ".git" not in wt.parts
    assert run_carry(*args[:4], "--abort", *args[6:]).code == 0
    assert not (upstream.path.parent / "upstream.carry").exists()


def test_no_squash_hint_for_another_subject(upstream: CommitBuilder, series_root: Path) -> None:
    stop = run_carry(*_series(upstream, series_root, "Rework h10 (#123)"))
    assert stop.code == 1 and "hint:" not in stop.out


def test_rebase_refuses_to_move_a_carry_branch_someone_moved(
        upstream: CommitBuilder, series_root: Path) -> None:
    args = _series(upstream, series_root, "Unrelated")
    upstream.checkout("base")
    upstream.commit("unrelated", {"other.txt": "x\n"})
    upstream.branch("main")
    upstream.checkout("main")
    first = run_carry(*args)
    assert first.code == 0, first.err
    branch = "refs/heads/carry/demo/main"
    head = upstream.rev(branch)
    assert run_carry(*args).code == 0  # carry's own result moves freely
    # someone commits on top of carry's branch
    git(upstream.path, "checkout", "-q", "carry/demo/main")
    mine = upstream.commit("my own work", {"mine.txt": "keep me\n"})
    git(upstream.path, "checkout", "-q", "main")
    refused = run_carry(*args)
    assert refused.code == 2
    assert "carry/demo/main is at" in refused.err and "will not overwrite" in refused.err
    assert upstream.rev(branch) == mine != head
    other = run_carry(*args, "--branch", "carry-demo-again")
    assert other.code == 0, other.err
