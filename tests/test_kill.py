"""`kill -9` at random points of every command that writes: import, apply, rebase onto one
target and onto several, `rebase --refresh`, and `rebase --continue`. After each kill (and
`--abort`, for a rebase that left a state) the refs and the series bytes are the old ones or
the new ones, never a mix: one target moved and not the other, or a branch moved and the
series still at its old version. `supersede --apply` writes to GitHub before the series: after
a kill, the next run must leave the new state whole (every PR closed once, with one comment,
and recorded), whatever the kill interrupted.

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

from tests import github_server
from tests.conftest import (
    FORK,
    LOGPROBZ,
    TOBY,
    CommitBuilder,
    git,
    kill_after,
    run_carry,
    util,
)
from tests.test_forge import _env, _import_and_apply

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


# -- supersede: GitHub first, then the series ------------------------------------------------

CLOSABLE = range(1, 6)


@pytest.fixture
def forge_project(gh: github_server.RunningServer, fork: CommitBuilder, series_root: Path,
                  monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """carry's #9 carries the series; alice's #1..#5 each carry some of its commits."""
    env = _env(gh, series_root)
    _import_and_apply(fork, env)
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
