"""`kill -9` at random points of every command that writes: import, apply, rebase onto one
target and onto several, `rebase --refresh`, and `rebase --continue`. After each kill (and
`--abort`, for a rebase that left a state) the refs and the series bytes are the old ones or
the new ones, never a mix: one target moved and not the other, or a branch moved and the
series still at its old version. `supersede --apply` writes to GitHub before the series: after
a kill, the next run must leave the new state whole (every PR closed once, with one comment,
and recorded), whatever the kill interrupted. The conflict loop too (F10): a `--skip` that
moves the kept worktree to the next stop in place, one with no worktree, the `--resolve`
that makes the worktree at a stop, and `carry edit` itself; after each kill the loop still
finishes with the same trees, and `--abort` leaves the repository as it was.

The default tier kills each command a few times; the slow tier 50 times each.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import github_server
from tests.conftest import (
    FORK,
    LOGPROBZ,
    TOBY,
    CommitBuilder,
    forge_env,
    git,
    import_and_apply,
    kill_after,
    run_carry,
    util,
)
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


def _edit_campaign(ctx: dict[str, Any], kills: int) -> dict[str, int]:
    """`rebase --continue` of `carry edit demo 5` (F12): it writes the amended patch as a new
    version and replays the later seven. A kill anywhere, then the --continue a maintainer
    runs again, ends in the one new state: one new version, no duplicate, every patch kept;
    and --abort after a kill puts back the repository and series as they were before the edit
    (or leaves the finished new state, when the kill came after the last write)."""
    up: CommitBuilder = ctx["up"]
    root: Path = ctx["root"]
    args = ("--repo", str(up.path), "--series-dir", str(root))
    d = root / "demo"
    manifest = (d / "series.toml").read_bytes()
    patches = {p.name: p.read_bytes() for p in (d / "patches").iterdir()}
    tags = git(root.parent, "tag", "--list").split()

    def put_back() -> None:
        run_carry("rebase", "demo", "--abort", *args)
        for ref in git(up.path, "for-each-ref", "--format=%(refname)", "refs/heads/carry/"
                       ).split():
            git(up.path, "update-ref", "-d", ref)
        for t in git(root.parent, "tag", "--list").split():
            if t not in tags:
                git(root.parent, "tag", "-d", t)
        for p in (d / "patches").iterdir():
            p.unlink()
        for name, data in patches.items():
            (d / "patches" / name).write_bytes(data)
        (d / "series.toml").write_bytes(manifest)

    def edited() -> None:
        put_back()
        res = run_carry("edit", "demo", "5", "--json", *args)
        assert res.code == 0, res.err
        import json
        wt = Path(json.loads(res.out)["worktree"])
        (wt / "pkg" / "m4.py").write_text("X = 40\n")
        git(wt, "commit", "-q", "-a", "--amend", "-m", "P4, amended\n\nSigned-off-by: "
            f"{LOGPROBZ}\n")

    def again() -> None:
        res = run_carry("rebase", "demo", "--continue", *args)
        assert res.code == 0 or "no carry rebase of demo is in progress" in res.err, res.err
        assert run_carry("rebase", "demo", "--continue", *args).code != 0  # nothing left

    cont = ("rebase", "demo", "--continue", *args)
    seen = Campaign(up.path, root, kills, seed=kills + 7).run(cont, edited, again)
    manifest_text = (d / "series.toml").read_text()
    assert "version = 2" in manifest_text and len(list((d / "patches").iterdir())) == 12
    put_back()
    before = (_branches(up.path), _series_bytes(root))
    edited()
    full = _timed(cont)
    new = (_branches(up.path), _series_bytes(root))
    rng = random.Random(kills)
    for i in range(kills):
        edited()
        kill_after(cont, full * 1.2 * (i + rng.random()) / kills)
        res = run_carry("rebase", "demo", "--abort", *args)
        assert res.code == 0 or "no carry rebase of demo is in progress" in res.err, res.err
        now = (_branches(up.path), _series_bytes(root))
        assert now in (before, new), f"kill {i} then --abort: a mix of old and new"
        put_back()
    return seen


def test_a_killed_edit_continue_finishes_once_or_aborts_whole(project: dict[str, Any]) -> None:
    _edit_campaign(project, kills=3)


@pytest.mark.slow
def test_thirty_kills_of_edit_continue(project: dict[str, Any]) -> None:
    seen = _edit_campaign(project, kills=30)
    print(f"kills that hit edit's --continue, of 30: {seen}")
    assert seen["killed"] >= 6, seen


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
        """Stopped at 0004; with `make`, the worktree asked for (--resolve) and there."""
        def reset() -> None:
            clean()
            assert run_carry(*args, "--onto", "main").code == 1
            if make:
                assert run_carry(*args, "--resolve").code == 1
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
             ("--resolve makes the worktree", False, ("--resolve",), ("--resolve",)))
    for name, make, action, first in paths if every else paths[:1]:
        out[name] = c.run((*args, *action), stopped(make), finished(first))
    # and --abort after a kill anywhere in those, back to the repository as it was
    clean()
    before = _snapshot(up.path)
    rng = random.Random(kills)
    for i in range(kills):
        for make, action in ((True, ("--skip",)), (False, ("--resolve",))):
            stopped(make)()
            kill_after((*args, *action), 0.4 * (i + rng.random()) / kills)
            assert run_carry(*args, "--abort").code == 0
            assert _snapshot(up.path) == before, f"kill {i} of {action}"
            _no_leftovers(up.path)
    return out


def _resolve_kills(ctx: dict[str, Any], kills: int) -> int:
    """`--resolve` killed at several points: a second `--resolve` then holds the stop's
    conflict (the worktree made again or finished, never a half-made one taken), and an
    `--abort` after a kill leaves the repository as it was, no worktree or kept ref left."""
    up: CommitBuilder = ctx["up"]
    args: tuple[str, ...] = ctx["args"]
    wt = up.path.parent / f"{up.path.name}.carry" / "demo" / "main"
    before = _snapshot(up.path)
    assert run_carry(*args, "--onto", "main").code == 1
    full = _timed((*args, "--resolve"))
    assert run_carry(*args, "--abort").code == 0
    killed = 0
    for i in range(kills):
        assert run_carry(*args, "--onto", "main").code == 1
        killed += kill_after((*args, "--resolve"), full * (i + 0.5) / kills) == -signal.SIGKILL
        if i % 2:
            res = run_carry(*args, "--resolve")
            assert res.code == 1 and f"resolve in {wt}" in res.out, res.err
            assert "<<<<<<<" in (wt / "src/util.py").read_text()
            assert git(wt, "status", "--porcelain").startswith("UU src/util.py")
        assert run_carry(*args, "--abort").code == 0
        assert _snapshot(up.path) == before, f"kill {i} of --resolve"
        _no_leftovers(up.path)
    return killed


def test_kills_of_resolve(conflicted: dict[str, Any]) -> None:
    assert _resolve_kills(conflicted, kills=4) >= 1


def _edit_start_kills(ctx: dict[str, Any], kills: int) -> int:
    """`carry edit demo 5` killed at several points: `--abort` (or nothing, when the kill
    came before the state) leaves refs, series and worktrees as they were; a new
    `carry edit` then works, so nothing a kill left is in its way."""
    up: CommitBuilder = ctx["up"]
    root: Path = ctx["root"]
    args = ("--repo", str(up.path), "--series-dir", str(root))
    edit = ("edit", "demo", "5", *args)
    before = (_snapshot(up.path), _series_bytes(root))
    full = _timed(edit)
    assert run_carry("rebase", "demo", "--abort", *args).code == 0
    killed = 0
    for i in range(kills):
        killed += kill_after(edit, full * (i + 0.5) / kills) == -signal.SIGKILL
        res = run_carry("rebase", "demo", "--abort", *args)
        assert res.code == 0 or "no carry rebase of demo is in progress" in res.err, res.err
        assert (_snapshot(up.path), _series_bytes(root)) == before, f"kill {i} of edit"
        _no_leftovers(up.path)
    assert run_carry(*edit).code == 0
    assert run_carry("rebase", "demo", "--abort", *args).code == 0
    return killed


def test_kills_of_edit(project: dict[str, Any]) -> None:
    assert _edit_start_kills(project, kills=4) >= 1


@pytest.mark.slow
def test_thirty_kills_of_resolve(conflicted: dict[str, Any]) -> None:
    killed = _resolve_kills(conflicted, 30)
    print(f"kills that hit --resolve, of 30: {killed}")
    assert killed >= 6


@pytest.mark.slow
def test_thirty_kills_of_edit(project: dict[str, Any]) -> None:
    killed = _edit_start_kills(project, 30)
    print(f"kills that hit carry edit, of 30: {killed}")
    assert killed >= 6


def test_kills_in_the_conflict_loop(conflicted: dict[str, Any]) -> None:
    seen = _loop_campaigns(conflicted, kills=3, every=False)  # the slow tier runs them all
    (skips,) = seen.values()
    assert skips["old"] + skips["new"] == 3 and skips["killed"] >= 1, skips  # each kill settled


@pytest.mark.slow
def test_fifty_kills_in_the_conflict_loop(conflicted: dict[str, Any]) -> None:
    seen = _loop_campaigns(conflicted, kills=50)
    total = {k: v["killed"] for k, v in seen.items()}
    print(f"kills that hit a running command, of 50 each: {total}")
    assert all(v["killed"] >= 10 for v in seen.values()), seen


# -- supersede: GitHub first, then the series ------------------------------------------------

CLOSABLE = range(1, 6)


@pytest.fixture
def forge_project(gh: github_server.RunningServer, fork: CommitBuilder, series_root: Path,
                  monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """carry's #9 carries the series; alice's #1..#5 each carry some of its commits."""
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    for key, value in env.items():  # kill_after's runs read os.environ
        monkeypatch.setenv(key, value)
    for n, rev, user in [(9, "carry/demo", "carry-bot"),
                         *((n, f"carry/demo~{n % 3}", "alice") for n in CLOSABLE)]:
        sha = git(fork.path, "rev-parse", rev)
        git(fork.path, "push", "-q", "origin", f"{sha}:refs/pull/{n}/head")
        gh.state.add_pull(FORK, n, title=f"pr {n}", body="<!-- carry:series=demo -->",
                          head=f"b{n}", head_sha=sha, base="main", user=user, draft=False)
    return {"gh": gh, "fork": fork, "root": series_root,
            "args": ("supersede", "demo", "--by", "9", "--forge-repo", FORK, "--repo",
                     str(fork.path), "--apply")}


def _supersede_campaign(ctx: dict[str, Any], kills: int) -> dict[str, int]:
    gh: github_server.RunningServer = ctx["gh"]
    root: Path = ctx["root"]
    args: tuple[str, ...] = ctx["args"]
    pulls = gh.state.repos[FORK].pulls
    manifest = (root / "demo" / "series.toml").read_bytes()

    def reset() -> None:
        (root / "demo" / "series.toml").write_bytes(manifest)
        for n in CLOSABLE:
            pulls[n].state, pulls[n].labels = "open", []
        gh.state.repos[FORK].comments.clear()

    def next_run() -> None:
        res = run_carry(*args)
        assert res.code == 0, res.err
        assert [pulls[n].state for n in CLOSABLE] == ["closed"] * len(CLOSABLE)
        assert sorted(c.issue for c in gh.state.repos[FORK].comments) == list(CLOSABLE)

    seen = Campaign(ctx["fork"].path, root, kills, seed=kills).run(args, reset, next_run)
    assert seen["old"] == 0, f"a closed PR was never recorded: {seen}"
    return seen


def test_a_killed_supersede_is_finished_by_the_next_run(forge_project: dict[str, Any]) -> None:
    _supersede_campaign(forge_project, kills=4)


@pytest.mark.slow
def test_thirty_kills_of_supersede(forge_project: dict[str, Any]) -> None:
    seen = _supersede_campaign(forge_project, kills=30)
    print(f"supersede kills that hit a running command, of 30: {seen['killed']}")
    assert seen["killed"] >= 10, seen


# -- a kill during a validation: the target's processes die with carry ------------------------

_PIDS = """import os, subprocess, sys, time


def _start(pids):
    # a grandchild of the step, as pytest-xdist or a hook's own tool would start one
    beat = subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.05)"])
    with open(pids + ".tmp", "w") as fh:
        fh.write(f"{os.getpid()} {beat.pid}\\n")
    os.replace(pids + ".tmp", pids)
"""


def _alive(pid: int, cmdline: bytes) -> bool:
    """Running (not a zombie) and still the process it was (its command line)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z" and cmd == cmdline


def _wait(what: str, until: Callable[[], bool], seconds: float) -> None:
    """Poll (a bound on waiting, not a claim about speed)."""
    end = time.monotonic() + seconds
    while not until():
        assert time.monotonic() < end, f"still {what} after {seconds} s"
        time.sleep(0.1)


@pytest.mark.parametrize("step", ["pytest", "hook"])
def test_a_kill_during_validation_leaves_no_target_process(tmp_path: Path, step: str) -> None:
    """kill -9 of `carry validate --engine local` while the target's pytest (or a pre-commit
    hook) runs: that process and the one it started are gone soon after, not left running."""
    import subprocess
    import sys

    from carry.intake import importer
    from carry.series import store as seriesmod
    from carry.series.store import Hook

    pids = tmp_path / "pids"
    up = CommitBuilder.init(tmp_path / "target")
    up.commit("Target", {
        "calc.py": "X = 1\n",
        "tests/conftest.py": _PIDS + f"\n\ndef pytest_sessionstart(session):\n"
                                     f"    _start({str(pids)!r})\n",
        "tests/test_slow.py": "import time\n\n\ndef test_slow():\n    time.sleep(600)\n",
        "tools/slow_hook.py": _PIDS + f"\n_start({str(pids)!r})\ntime.sleep(600)\n",
        ".pre-commit-config.yaml": "repos:\n  - repo: local\n    hooks:\n      - id: slow\n"
                                   "        name: slow\n        entry: python tools/slow_hook.py\n"
                                   "        language: system\n        pass_filenames: false\n",
    })
    up.tag("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("Change X", {"calc.py": "X = 2\n"})
    root = tmp_path / "series"
    importer.run(root, "demo",
        importer.Source(str(up.path), range="base..feature"), title="demo")
    s = seriesmod.find(root, "demo")
    s.manifest.test.python = sys.executable
    if step == "pytest":
        s.manifest.test.suites = ["tests"]
    else:
        s.manifest.test.hooks = [Hook()]
    seriesmod.save_manifest(s)
    args = [sys.executable, "-m", "carry", "validate", "demo", "--repo", str(up.path), "--onto",
            "base", "--engine", "local", "--allow-no-tests", "--series-dir", str(root)]
    err = tmp_path / "carry.err"
    with open(err, "wb") as fh:
        carry = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=fh)
    procs: list[tuple[int, bytes]] = []
    try:
        _wait("waiting for the target's processes",
              lambda: pids.exists() or carry.poll() is not None, 120)
        assert pids.exists(), f"carry ended first: {err.read_text()}"
        for pid in map(int, pids.read_text().split()):
            procs.append((pid, Path(f"/proc/{pid}/cmdline").read_bytes()))
        assert all(_alive(p, c) for p, c in procs)
        carry.send_signal(signal.SIGKILL)
        assert carry.wait() == -signal.SIGKILL
        _wait(f"running: the {step} step and its child",
              lambda: not any(_alive(p, c) for p, c in procs), 60)
    finally:
        if carry.poll() is None:
            carry.kill()
            carry.wait()
        for pid, cmdline in procs:  # only what this test started, by pid, if still it
            if _alive(pid, cmdline):
                os.kill(pid, signal.SIGKILL)


STRAY = b"""carry resolution 1
patch 0099
path "src/gone.py"
version 1
hunks 1

hunk 1
side 1
 a
side 1
 b
base 1
 c
resolution 1
 d
"""


@pytest.fixture
def own_series(upstream: CommitBuilder, make_series: MakeSeries,
               series_root: Path) -> dict[str, Any]:
    """Six patches by the committer (so `trailers --signoff` signs them all) and a recorded
    resolution of a patch that left the series (so `status --prune` removes it), in a
    checkout where versions are tags."""
    me = ("C O Mitter", "committer@example.com")
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    for i in range(6):
        upstream.commit(f"Mine {i}\n", {f"pkg/m{i}.py": f"X = {i}\n"}, author=me)
    upstream.checkout("main")
    make_series(upstream, "feature")
    rdir = series_root / "demo" / "resolutions"
    rdir.mkdir()
    (rdir / "0099-20db7cad6b5a7025.txt").write_bytes(STRAY)
    git(series_root.parent, "init", "-q")
    return {"root": series_root, "checkout": series_root.parent}


@pytest.mark.parametrize("command", ["trailers --signoff", "status --prune"])
def test_kills_of_signoff_and_prune_leave_old_or_new(own_series: dict[str, Any],
                                                     command: str) -> None:
    """`trailers --signoff` and `status --prune` write the next version; killed anywhere,
    the series is the old one or the new one, and its tags (after a rerun, which tags the
    version a kill left untagged) match."""
    root: Path = own_series["root"]
    checkout: Path = own_series["checkout"]
    d = root / "demo"
    before = {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}
    tags = git(checkout, "tag", "--list").split()

    def reset() -> None:
        for t in git(checkout, "tag", "--list").split():
            if t not in tags:
                git(checkout, "tag", "-d", t)
        for p in [p for p in d.rglob("*") if p.is_file() and p not in before]:
            p.unlink()
        for p, data in before.items():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)

    sign = ("trailers", "demo", "--signoff", "--series-dir", str(root))
    prune = ("status", "demo", "--prune", "--series-dir", str(root))

    def again(args: tuple[str, ...]) -> Callable[[], None]:
        def settle() -> None:
            res = run_carry(*args)
            assert res.code == 0 and "Traceback" not in res.err, res.err
        return settle

    args = sign if command == "trailers --signoff" else prune
    seen = Campaign(checkout, root, 3, seed=7).run(args, reset, again(args))
    assert seen["old"] + seen["new"] == 3
