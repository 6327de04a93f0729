"""A refreshed series says how to commit it (and the command works), the help and README say so,
and ci/demo.sh leaves nothing in $TMPDIR."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import CommitBuilder, git, run_carry, util

REPO = Path(__file__).resolve().parent.parent


def test_refresh_prints_the_commit_command_and_it_commits_the_series(
        upstream: CommitBuilder, make_series: Callable[..., Any], series_root: Path) -> None:
    checkout = series_root.parent
    git(checkout, "init", "-q")
    git(checkout, "config", "user.name", "A U Thor")  # who commits the new version
    git(checkout, "config", "user.email", "author@example.com")
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("One", {"src/util.py": util(h1=11)})
    upstream.checkout("main")
    make_series(upstream, "feature")
    upstream.commit("Upstream moves", {"README": "moved\n"})
    r = run_carry("rebase", "demo", "--repo", str(upstream.path), "--onto", "main",
                  "--refresh", "--series-dir", str(series_root))
    assert r.code == 0, r.err
    [cmd] = [ln.split("commit it: ", 1)[1] for ln in r.out.splitlines() if "commit it: " in ln]
    assert cmd.startswith(f"git -C {checkout} add -- series/demo && ")
    assert git(checkout, "status", "--porcelain", "--", "series/demo")  # written, uncommitted
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert git(checkout, "status", "--porcelain", "--", "series/demo") == ""
    assert git(checkout, "log", "-1", "--format=%s") == "demo v2"
    assert "\nversion = 2\n" in git(checkout, "show", "HEAD:series/demo/series.toml")


def test_help_and_readme_say_to_commit_the_refreshed_series() -> None:
    helped = " ".join(run_carry("rebase", "--help").out.split())
    assert "git add series/NAME && git commit" in helped
    assert "--continue" in helped and "then commit series/NAME" in helped
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "does not commit it: commit it in the series checkout (`git add series/NAME" in readme


def test_the_demo_leaves_nothing_in_tmpdir(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=str(REPO / "tooling"))
    proc = subprocess.run(["bash", str(REPO / "ci" / "demo.sh")], env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "demo: OK" in proc.stdout and "## " in proc.stdout  # the summary, shown
    assert list(tmp.iterdir()) == []
