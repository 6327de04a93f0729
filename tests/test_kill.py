"""`kill -9` at random points of every command that writes: import, apply, rebase onto one
target and onto several, `rebase --refresh`, and `rebase --continue`. After each kill (and
`--abort`, for a rebase that left a state) the refs and the series bytes are the old ones or
the new ones, never a mix: one target moved and not the other, or a branch moved and the
series still at its old version. The conflict loop too (F10): a `--skip` that moves the kept
worktree to the next stop in place, one with no worktree, and the `--continue` that makes the
worktree at a stop; after each kill the loop still finishes with the same trees, and
`--abort` leaves the repository as it was.

The default tier kills each command a few times; the slow tier 50 times each.
"""

from __future__ import annotations

import hashlib
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, kill_after, run_carry, util
from tests.test_rebase_conflict import _no_leftovers, _snapshot

MakeSeries = Callable[..., Any]
_SKIP = (".lock", ".versions")  # lock files and kept old versions are not the series' content


def _series_bytes(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not any(part.endswith(_SKIP) or part.startswith(".") and ".new-" in part
                                   for part in rel.parts):  # nor a killed run's scratch
            data = p.read_bytes()
            if p.suffix == ".patch":  # `From <sha>` names the rebased commit, whose committer
                data = data.split(b"\n", 1)[1]  # date is the run's: the rest must be equal
            out[str(rel)] = hashlib.sha256(data).hexdigest()
    return out


def _branches(repo: Path) -> dict[str, str]:
    """Every branch and tag, by the tree it holds: a rebuilt commit differs only in its
    committer date, so the tree is what says old or new."""
    rows = git(repo, "for-each-ref", "--format=%(refname) %(objectname)",
               "refs/heads", "refs/tags").splitlines()
    return {ref: git(repo, "rev-parse", f"{sha}^{{tree}}")
            for ref, sha in (r.split() for r in rows)}


def _timed(args: tuple[str, ...]) -> float:
    start = time.monotonic()
    res = run_carry(*args)
    assert res.code in (0, 1), res.err
    return time.monotonic() - start


class Campaign:
    """Kill one command at random moments; after each kill, `settle` (an --abort, or
    nothing) and check the state is one of the two whole ones."""

    def __init__(self, repo: Path, series: Path, kills: int, seed: int) -> None:
        self.repo, self.series, self.kills = repo, series, kills
        self.rng = random.Random(seed)

    def state(self) -> tuple[dict[str, str], dict[str, str]]:
        return _branches(self.repo), _series_bytes(self.series)

    def run(self, args: tuple[str, ...], reset: Callable[[], None],
            settle: Callable[[], None]) -> dict[str, int]:
        reset()
        old = self.state()
        full = _timed(args)
        settle()
        new = self.state()
        assert new != old, "the command changed nothing: the campaign would prove nothing"
        seen = {"old": 0, "new": 0, "killed": 0}
        for i in range(self.kills):
            reset()
            assert self.state() == old
            for ref in git(self.repo, "for-each-ref", "--format=%(refname)",
                           "refs/carry/cache/").split():
                git(self.repo, "update-ref", "-d", ref)  # every run builds its chain again
            code = kill_after(args, full * 1.2 * (i + self.rng.random()) / self.kills)
            seen["killed"] += code == -signal.SIGKILL
            settle()
            now = self.state()
            assert now in (old, new), f"kill {i}: a mix of old and new (exit {code}): " + str(
                [(k, v) for k, v in {**now[0], **now[1]}.items()
                 if v not in ({**old[0], **old[1]}.get(k), {**new[0], **new[1]}.get(k))]
                + [k for k in {**old[0], **old[1], **new[0], **new[1]}
                   if k not in {**now[0], **now[1]}])
            seen["old" if now == old else "new"] += 1
        assert seen["killed"], "no run was killed mid-way"
        return seen


@pytest.fixture
def project(upstream: CommitBuilder, make_series: MakeSeries,
            series_root: Path) -> dict[str, Any]:
    """A 12-patch series that replays cleanly onto two moved targets, `main` and `rel`."""
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    for i in range(12):
        who = TOBY if i < 2 else LOGPROBZ
        upstream.commit(f"P{i}\n\nSigned-off-by: {who}\n", {f"pkg/m{i}.py": f"X = {i}\n"},
                        author=who)
    upstream.checkout("main")
    upstream.commit("Upstream", {"src/util.py": util(h10=101)})
    upstream.branch("rel", "main")
    upstream.commit("Upstream more", {"pkg/other.py": "Y = 1\n"})
    make_series(upstream, "feature")
    git(series_root.parent, "init", "-q")  # versions are tagged in the checkout
    return {"up": upstream, "root": series_root,
            "args": ("rebase", "demo", "--repo", str(upstream.path), "--series-dir",
                     str(series_root))}


def _abort(args: tuple[str, ...]) -> Callable[[], None]:
    def settle() -> None:
        res = run_carry(*args, "--abort")
        assert res.code == 0 or "no carry rebase of demo is in progress" in res.err, res.err
    return settle


def _campaigns(ctx: dict[str, Any], kills: int) -> dict[str, dict[str, int]]:
    up: CommitBuilder = ctx["up"]
    root: Path = ctx["root"]
    args: tuple[str, ...] = ctx["args"]
    c = Campaign(up.path, root, kills, seed=kills)
    manifest = (root / "demo" / "series.toml").read_bytes()
    patches = {p.name: p.read_bytes() for p in (root / "demo" / "patches").iterdir()}
    tags = git(root.parent, "tag", "--list").split()

    def clean() -> None:
        for ref in git(up.path, "for-each-ref", "--format=%(refname)", "refs/heads/carry/",
                       "refs/heads/applied").split():
            git(up.path, "update-ref", "-d", ref)
        run_carry(*args, "--abort")

    def put_back_series() -> None:
        clean()
        for t in git(root.parent, "tag", "--list").split():
            if t not in tags:
                git(root.parent, "tag", "-d", t)
        d = root / "demo"
        for p in (d / "patches").iterdir():
            p.unlink()
        for name, data in patches.items():
            (d / "patches" / name).write_bytes(data)
        (d / "series.toml").write_bytes(manifest)

    def no_series() -> None:
        import shutil

        shutil.rmtree(root / "fresh", ignore_errors=True)

    out = {}
    out["import"] = Campaign(up.path, root, kills, seed=1).run(
        ("import", "fresh", "--repo", str(up.path), "--branch", "feature", "--base", "base",
         "--series-dir", str(root)), no_series, lambda: None)
    out["apply"] = c.run(("apply", "demo", "--repo", str(up.path), "--onto", "main",
                          "--branch", "applied", "--series-dir", str(root)), clean, lambda: None)
    out["rebase, one target"] = c.run((*args, "--onto", "main"), clean, _abort(args))
    out["rebase, two targets"] = c.run((*args, "--onto", "main", "--onto", "rel"), clean,
                                       _abort(args))
    out["rebase --refresh"] = c.run((*args, "--onto", "main", "--refresh"), put_back_series,
                                    _abort(args))
    return out


def test_kills_leave_old_or_new_never_a_mix(project: dict[str, Any]) -> None:
    seen = _campaigns(project, kills=3)
    assert set(seen) == {"import", "apply", "rebase, one target", "rebase, two targets",
                         "rebase --refresh"}


@pytest.mark.slow
def test_fifty_kills_of_every_command(project: dict[str, Any]) -> None:
    seen = _campaigns(project, kills=50)
    total = {k: v["killed"] for k, v in seen.items()}
    print(f"kills that hit a running command, of 50 each: {total}")
    assert all(v["killed"] >= 10 for v in seen.values()), seen


# -- the conflict loop (F10 item 4) -----------------------------------------------------------


@pytest.fixture
def conflicted(upstream: CommitBuilder, make_series: MakeSeries,
               series_root: Path) -> dict[str, Any]:
    """Twelve patches onto a moved `main` that stop at 0004 and at 0009, and a tree of a few
    hundred files for the conflict worktree to hold."""
    upstream.commit("bulk", {f"bulk/d{d}/f{f}.txt": f"{d} {f}\n" * 20
                             for d in range(6) for f in range(50)})
    git(upstream.path, "tag", "-f", "base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    for i in range(12):
        files = {3: {"src/util.py": util(h1=11)},
                 8: {"src/core.py": "def f():\n    return 8\n"}}.get(
            i, {f"pkg/m{i}.py": f"X = {i}\n"})
        upstream.commit(f"P{i}", files, author=TOBY if i % 2 else LOGPROBZ)
    upstream.checkout("main")
    git(upstream.path, "reset", "-q", "--hard", "base")
    upstream.commit("Upstream h1", {"src/util.py": util(h1=101)})
    upstream.commit("Upstream f", {"src/core.py": "def f():\n    return 30\n"})
    make_series(upstream, "feature")
    return {"up": upstream, "root": series_root,
            "args": ("rebase", "demo", "--repo", str(upstream.path), "--series-dir",
                     str(series_root))}


def _to_the_end(args: tuple[str, ...]) -> Callable[[], None]:
    """Settle a killed loop the way a maintainer would: --skip while stopped at a conflict
    (--continue when the kill left it between two stops), until the rebase is done."""
    def settle() -> None:
        for _ in range(6):
            res = run_carry(*args, "--skip")
            if res.code == 2 and "not stopped at a conflict" in res.err:
                res = run_carry(*args, "--continue")
            if res.code == 0 or "no carry rebase of demo is in progress" in res.err:
                return
            assert res.code == 1, res.err
        raise AssertionError("the loop did not finish")
    return settle


def _loop_campaigns(ctx: dict[str, Any], kills: int,
                    every: bool = True) -> dict[str, dict[str, int]]:
    up: CommitBuilder = ctx["up"]
    args: tuple[str, ...] = ctx["args"]
    c = Campaign(up.path, ctx["root"], kills, seed=kills + 1)

    def clean() -> None:
        run_carry(*args, "--abort")
        for ref in git(up.path, "for-each-ref", "--format=%(refname)",
                       "refs/heads/carry/").split():
            git(up.path, "update-ref", "-d", ref)

    def stopped(make: bool) -> Callable[[], None]:
        """Stopped at 0004; with `make`, the worktree asked for (--continue) and there."""
        def reset() -> None:
            clean()
            assert run_carry(*args, "--onto", "main").code == 1
            if make:
                assert run_carry(*args, "--continue").code == 1
        return reset

    def finished(first: tuple[str, ...]) -> Callable[[], None]:
        """`first` runs once before the skips: a --continue after a kill must take nothing
        from a worktree it had not finished making (it makes it again, or finds markers)."""
        def settle() -> None:
            if first:
                assert run_carry(*args, *first).code in (0, 1, 2)
            _to_the_end(args)()
            assert not (up.path.parent / f"{up.path.name}.carry").exists()
        return settle

    out = {}
    paths = (("--skip, worktree kept", True, ("--skip",), ()),
             ("--skip --json, no worktree", False, ("--skip", "--json"), ()),
             ("--continue makes the worktree", False, ("--continue",), ("--continue",)))
    for name, make, action, first in paths if every else paths[:1]:
        out[name] = c.run((*args, *action), stopped(make), finished(first))
    # and --abort after a kill anywhere in those, back to the repository as it was
    clean()
    before = _snapshot(up.path)
    rng = random.Random(kills)
    for i in range(kills):
        for make, action in ((True, ("--skip",)), (False, ("--continue",))):
            stopped(make)()
            kill_after((*args, *action), 0.4 * (i + rng.random()) / kills)
            assert run_carry(*args, "--abort").code == 0
            assert _snapshot(up.path) == before, f"kill {i} of {action}"
            _no_leftovers(up.path)
    return out


def test_kills_in_the_conflict_loop(conflicted: dict[str, Any]) -> None:
    seen = _loop_campaigns(conflicted, kills=3, every=False)  # the slow tier runs them all
    assert set(seen) == {"--skip, worktree kept"}


@pytest.mark.slow
def test_fifty_kills_in_the_conflict_loop(conflicted: dict[str, Any]) -> None:
    seen = _loop_campaigns(conflicted, kills=50)
    total = {k: v["killed"] for k, v in seen.items()}
    print(f"kills that hit a running command, of 50 each: {total}")
    assert all(v["killed"] >= 10 for v in seen.values()), seen
