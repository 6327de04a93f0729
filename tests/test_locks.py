"""One writer per series: a second carry process that would write a series while another one
does is refused in one line that names the holder's pid; a killed holder leaves no lock.

The first process is held inside its lock for as long as the test wants, with no timing: its
git commands write their trace (GIT_TRACE) to a named pipe that nobody reads yet.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from carry.series.locks import lock_path
from tests.conftest import CommitBuilder, git, run_carry


@contextmanager
def held_import(upstream: CommitBuilder, root: Path, tmp: Path) -> Iterator[subprocess.Popen[str]]:
    """A real `carry import` stopped at its first git command, after it took the lock."""
    fifo = tmp / "trace.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "carry", "import", "demo", "--repo", str(upstream.path),
         "--range", "base..feature", "--series-dir", str(root)],
        env=dict(os.environ, GIT_TRACE=str(fifo)), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    lock = lock_path(root, "demo")
    for _ in range(3000):  # wait for a state (the kernel lists the lock), up to 30 s
        if lock.exists() and f" {proc.pid} " in Path("/proc/locks").read_text():
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    try:
        yield proc
    finally:
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the held git go on
        fifo.unlink()  # later git commands trace to a plain file
        proc.wait()
        os.close(reader)


def _refused(r: object, holder: int, what: str = "series demo") -> None:
    code, err = r.code, r.err  # type: ignore[attr-defined]
    assert code == 2, r
    assert err.splitlines() == [err.strip()] and "Traceback" not in err
    assert f"carry: error: {what} is being changed by pid {holder}" in err


def test_two_imports_at_once(upstream: CommitBuilder, series_root: Path, tmp_path: Path) -> None:
    upstream.commit("Change\n", {"src/core.py": "changed\n"})
    upstream.branch("feature")
    with held_import(upstream, series_root, tmp_path) as first:
        second = run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                           "base..feature", "--series-dir", str(series_root))
        _refused(second, first.pid)
        assert not (series_root / "demo").exists()
    assert first.returncode == 0, first.stderr.read()  # type: ignore[union-attr]
    assert "-> v1" in first.stdout.read()  # type: ignore[union-attr]
    again = run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                      "base..feature", "--series-dir", str(series_root))
    assert again.code == 0, again.err
    assert "v1" in again.out and "v2" not in again.out


def test_a_rebase_waits_for_no_one_and_a_dry_run_is_not_refused(
        upstream: CommitBuilder, series_root: Path, tmp_path: Path) -> None:
    upstream.commit("Change\n", {"src/core.py": "changed\n"})
    upstream.branch("feature")
    assert run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                     "base..feature", "--series-dir", str(series_root)).code == 0
    refs = git(upstream.path, "for-each-ref")
    with held_import(upstream, series_root, tmp_path) as first:
        r = run_carry("rebase", "demo", "--repo", str(upstream.path), "--onto", "base",
                      "--series-dir", str(series_root))
        _refused(r, first.pid)
        assert git(upstream.path, "for-each-ref") == refs
        dry = run_carry("rebase", "demo", "--repo", str(upstream.path), "--onto", "base",
                        "--dry-run", "--series-dir", str(series_root))
        assert dry.code == 0, dry.err


def test_a_killed_holder_leaves_no_lock(upstream: CommitBuilder, series_root: Path,
                                        tmp_path: Path) -> None:
    upstream.commit("Change\n", {"src/core.py": "changed\n"})
    upstream.branch("feature")
    with held_import(upstream, series_root, tmp_path) as first:
        first.kill()
        first.wait()
    r = run_carry("import", "demo", "--repo", str(upstream.path), "--range", "base..feature",
                  "--series-dir", str(series_root))
    assert r.code == 0, r.err


def test_in_a_series_checkout_the_lock_lives_under_git_and_still_locks(
        upstream: CommitBuilder, tmp_path: Path) -> None:
    """A series folder in a git checkout: the lock is `.git/carry/locks/...`, so `git status`
    of the checkout never lists it; a second writer is still refused while it is held."""
    checkout = tmp_path / "checkout"
    root = checkout / "series"
    root.mkdir(parents=True)
    git(checkout, "init", "-q")
    upstream.commit("Change\n", {"src/core.py": "changed\n"})
    upstream.branch("feature")
    lock = lock_path(root, "demo")
    assert lock.is_relative_to(checkout / ".git" / "carry" / "locks"), lock
    with held_import(upstream, root, tmp_path) as first:
        second = run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                           "base..feature", "--series-dir", str(root))
        _refused(second, first.pid)
    assert first.returncode == 0, first.stderr.read() if first.stderr else ""
    status = git(checkout, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert status and all(line.startswith("?? series/demo/") for line in status), status
    git(checkout, "add", "-A")
    git(checkout, "commit", "-qm", "v1", env={"GIT_AUTHOR_NAME": "A U Thor",
                                              "GIT_AUTHOR_EMAIL": "author@example.com"})
    again = run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                      "base..feature", "--series-dir", str(root))
    assert again.code == 0, again.err
    assert git(checkout, "status", "--porcelain", "--untracked-files=all") == ""
    assert not list(root.glob(".*.lock"))


def test_in_a_linked_worktree_the_lock_lives_under_its_own_git_dir(
        upstream: CommitBuilder, tmp_path: Path) -> None:
    """A `.git` file (a linked worktree) names the git dir the lock goes under."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    git(checkout, "init", "-q")
    git(checkout, "commit", "-q", "--allow-empty", "-m", "start",
        env={"GIT_AUTHOR_NAME": "A U Thor", "GIT_AUTHOR_EMAIL": "author@example.com"})
    linked = tmp_path / "linked"
    git(checkout, "worktree", "add", "-q", str(linked))
    root = linked / "series"
    upstream.commit("Change\n", {"src/core.py": "changed\n"})
    upstream.branch("feature")
    r = run_carry("import", "demo", "--repo", str(upstream.path), "--range", "base..feature",
                  "--series-dir", str(root))
    assert r.code == 0, r.err
    assert lock_path(root, "demo").parent == checkout / ".git/worktrees/linked/carry/locks"
    status = git(linked, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert status and all(line.startswith("?? series/demo/") for line in status), status
