"""Skips worked out ahead (`rebase.skipmemo`, issue 28): a `--skip` the stop before kept is
the full `--skip` from the same state, byte for byte (stdout, stderr, exit code, the state
file but the time its stop was reached), and it is taken only while every input it was
worked out from is as it was: any other one (manifest, patch list, width, state, a worktree
at the stop, a damaged or linked memo, a held lock, another command line) takes the full
path, which says what a user expects. Real git, the real CLI in a subprocess."""

from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TOBY, CommitBuilder, git, run_carry, util

SPREAD = (1, 5, 9, 13, 17)  # functions far enough apart that no patch's hunk holds another's


@pytest.fixture
def many(upstream: CommitBuilder, make_series: Any, series_root: Path) -> dict[str, Any]:
    """Five patches, each retuning one helper that upstream's main retunes too: five stops.
    The first call stops at 0001; the skip from it works out the next ones."""
    git(upstream.path, "checkout", "-q", "-b", "feature")
    done: dict[str, int] = {}
    for n, h in enumerate(SPREAD, 1):
        done[f"h{h}"] = 10 * h + 1
        upstream.commit(f"P{n}: h{h}", {"src/util.py": util(**done)}, author=TOBY)
    upstream.checkout("main")
    upstream.commit("Upstream retunes", {"src/util.py": util(**{f"h{h}": 100 + h
                                                               for h in SPREAD})})
    make_series(upstream, "feature")
    args = ("rebase", "demo", "--repo", str(upstream.path), "--series-dir", str(series_root))
    state = upstream.path / ".git" / "carry" / "rebase" / "demo" / "main.json"
    return {"up": upstream, "root": series_root, "args": args, "state": state,
            "wt": upstream.path.parent / f"{upstream.path.name}.carry" / "demo" / "main"}


def _stopped_twice(ctx: dict[str, Any]) -> None:
    """The first call, which keeps no skips, and one skip, which works out the rest."""
    assert run_carry(*ctx["args"], "--onto", "main").code == 1
    assert not ctx["state"].with_suffix(".skip").exists()  # CI's call pays for none
    r = _skip(ctx)
    assert r.code == 1 and "CONFLICT in 0002" in r.out, r.err
    assert ctx["state"].with_suffix(".skip").is_file()


def _files(ctx: dict[str, Any]) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in ctx["state"].parent.iterdir()}


def _put(ctx: dict[str, Any], files: dict[str, bytes]) -> None:
    for p in ctx["state"].parent.iterdir():
        p.unlink()
    for name, data in files.items():
        (ctx["state"].parent / name).write_bytes(data)


def _unstamped(data: bytes) -> bytes:
    return re.sub(rb'\n "started": "[^"]*"', b"", data)


def _skip(ctx: dict[str, Any], *extra: str, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> Any:
    return run_carry(*ctx["args"], "--skip", *extra, env=env, cwd=cwd)


def test_every_kept_skip_is_the_full_skip_from_the_same_state(many: dict[str, Any]) -> None:
    _stopped_twice(many)
    memo = many["state"].with_suffix(".skip")
    kept = 0
    while True:
        before = _files(many)
        fast = _skip(many)
        if fast.code != 1:  # the finishing skip, never kept
            break
        after_fast = _files(many)
        assert after_fast[memo.name] == before[memo.name]  # taken as kept, not worked out
        kept += 1
        _put(many, before)
        memo.unlink()
        full = _skip(many)
        assert (fast.code, fast.out, fast.err) == (full.code, full.out, full.err)
        name = many["state"].name
        assert _unstamped(after_fast[name]) == _unstamped(many["state"].read_bytes())
        assert re.search(rb'\n "started": "20[0-9-]{8}T', after_fast[name])  # this skip's
    assert kept == 3  # to 0003, 0004 and 0005
    assert fast.code == 0 and not list(many["state"].parent.glob("*"))  # the finish: all gone


def test_a_kept_skip_starts_no_git(many: dict[str, Any], tmp_path: Path) -> None:
    _stopped_twice(many)
    trace = tmp_path / "git.trace"
    r = _skip(many, env={"GIT_TRACE": str(trace)})
    assert r.code == 1 and "CONFLICT in 0003" in r.out, r.err
    assert not trace.exists() or "built-in: git" not in trace.read_text()


@pytest.mark.parametrize("change", ["manifest", "patches", "width", "state", "worktree",
                                    "garbage", "symlink", "fifo", "json", "keep ref",
                                    "cwd"])
def test_a_changed_input_takes_the_full_skip(many: dict[str, Any], change: str,
                                             tmp_path: Path) -> None:
    _stopped_twice(many)
    state, memo = many["state"], many["state"].with_suffix(".skip")
    kept = memo.read_bytes()
    env: dict[str, str] = {}
    extra: tuple[str, ...] = ()
    cwd: Path | None = None
    manifest = many["root"] / "demo" / "series.toml"
    if change == "manifest":
        manifest.write_text(manifest.read_text() + "\n# a comment\n")
    elif change == "patches":
        (many["root"] / "demo" / "patches" / "README").write_text("notes\n")
    elif change == "width":
        env["COLUMNS"] = "132"
    elif change == "state":
        state.write_text(json.dumps(json.loads(state.read_text()), indent=2) + "\n")
    elif change == "worktree":
        many["wt"].mkdir(parents=True)  # the next stop's: an empty folder a shell left
    elif change == "garbage":
        memo.write_bytes(b"{\"version\": 1, \"steps\": [")
    elif change == "symlink":
        (tmp_path / "elsewhere.skip").write_bytes(kept)
        memo.unlink()
        memo.symlink_to(tmp_path / "elsewhere.skip")
    elif change == "fifo":  # read, it would wait for a writer forever
        memo.unlink()
        os.mkfifo(memo)
    elif change == "json":
        extra = ("--json",)
    elif change == "cwd":  # what the output's commands say depends on where it runs
        cwd = tmp_path
    else:
        ref = "refs/carry/stops/demo/main"
        git(many["up"].path, "update-ref", ref, git(many["up"].path, "rev-parse", ref + "^1"))
    before = state.read_bytes()
    r = _skip(many, *extra, env=env, cwd=cwd)
    if change == "patches":  # the full path loads the series, and refuses a stray file
        assert r.code == 2 and "README: not a patch file name" in r.err, r.err
        assert state.read_bytes() == before and memo.read_bytes() == kept
        return
    assert r.code == 1, r.err
    if change == "json":
        assert json.loads(r.out)[0]["conflict"]["file"].startswith("0003")
    else:
        assert "CONFLICT in 0003" in r.out, r.out + r.err
    if change != "symlink":
        assert not memo.exists() or memo.read_bytes() != kept  # the full path ran
    else:
        assert (tmp_path / "elsewhere.skip").read_bytes() == kept  # never followed


def test_a_held_lock_is_said_by_the_full_skip_and_nothing_moves(
        many: dict[str, Any]) -> None:
    _stopped_twice(many)
    before = _files(many)
    lock = many["up"].path / ".git" / "carry" / "rebase.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        r = _skip(many)
    finally:
        os.close(fd)
    assert r.code != 0 and f"pid {os.getpid()}" in r.err, r.err
    assert _files(many) == before
    assert "CONFLICT in 0003" in _skip(many).out  # kept, once the lock is free


def test_abort_removes_the_kept_skips(many: dict[str, Any]) -> None:
    _stopped_twice(many)
    assert run_carry(*many["args"], "--abort").code == 0
    assert not list(many["state"].parent.glob("*"))


def test_a_memo_that_cannot_be_written_costs_only_speed(many: dict[str, Any]) -> None:
    assert run_carry(*many["args"], "--onto", "main").code == 1
    memo = many["state"].with_suffix(".skip")
    memo.mkdir()  # where the memo goes: the skip is done before it is written
    r = _skip(many)
    assert r.code == 1 and "CONFLICT in 0002" in r.out and not r.err, r.err
    assert memo.is_dir() and "CONFLICT in 0003" in _skip(many).out
