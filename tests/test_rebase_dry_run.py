"""F16 #8: a dry run writes no ref, so a carry branch checked out in the repository (the
usual place to look at a rebase's result) does not stop it; a real rebase still refuses to
move that branch under its worktree."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from carry.series.manifest import Target
from tests.conftest import CommitBuilder, git, run_carry, util


def test_dry_run_with_the_carry_branch_checked_out(
        upstream: CommitBuilder, make_series: Callable[..., Any], series_root: Path) -> None:
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("One", {"src/util.py": util(h1=11)})
    upstream.checkout("main")
    make_series(upstream, "feature", targets=[Target("upstream-main", ref="main")])
    args = ("rebase", "demo", "--repo", str(upstream.path), "--series-dir", str(series_root))
    assert run_carry(*args).code == 0
    branch = "carry/demo/upstream-main"
    upstream.checkout(branch)
    upstream.checkout("main")
    upstream.commit("Upstream moves", {"README": "moved\n"})
    upstream.checkout(branch)
    before = git(upstream.path, "for-each-ref", "--format=%(refname) %(objectname)")
    dry = run_carry(*args, "--dry-run", "--json")
    assert dry.code == 0, dry.err
    [doc] = json.loads(dry.out)
    assert doc["dry_run"] is True and doc["status"] == "applied" and not doc["updated"]
    assert git(upstream.path, "for-each-ref", "--format=%(refname) %(objectname)") == before
    assert git(upstream.path, "symbolic-ref", "HEAD") == f"refs/heads/{branch}"
    real = run_carry(*args)
    assert real.code != 0 and f"{branch} is checked out in" in real.err, real.err
    assert git(upstream.path, "for-each-ref", "--format=%(refname) %(objectname)") == before
