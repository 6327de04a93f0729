"""The conflict loop as fast as git's. A stop makes no worktree (text or --json);
--continue makes it when a maintainer asks to resolve, and from then on one worktree per
(series, target) is kept from stop to stop and moved in place; a --skip merges nothing
because it takes the forecast's trial; a resolution replays the rest for real; and --abort
after all of that leaves the repository as it was."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import CommitBuilder, git, run_carry, util

MakeSeries = Callable[..., Any]


def _state(ctx: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ctx["state"].read_text())
    return data


def _statuses(doc: dict[str, Any]) -> list[str]:
    return [p["status"] for p in doc["patches"]]


def _snapshot(repo: Path) -> dict[str, Any]:
    """Refs (but carry's content-addressed cache), files, index, HEAD, worktrees."""
    refs = [line for line in git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
            .splitlines() if not line.startswith("refs/carry/cache/")]
    files = {str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(repo.rglob("*"))
             if ".git" not in p.relative_to(repo).parts and p.is_file()}
    return {"refs": refs, "HEAD": git(repo, "symbolic-ref", "HEAD"), "files": files,
            "index": hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
            "worktrees": git(repo, "worktree", "list", "--porcelain")}


def _resolving(ctx: dict[str, Any], *extra: str) -> None:
    """Stop at 0002 and ask for the worktree, as a maintainer who means to resolve does."""
    assert run_carry(*ctx["args"], "--onto", "main", *extra).code == 1
    res = run_carry(*ctx["args"], "--resolve")
    assert res.code == 1 and f"resolve in {ctx['wt']}" in res.out, res.out


def _traced(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    trace = tmp_path / "merges.trace"
    trace.write_text("")
    return trace, {"CARRY_TRACE_MERGES": str(trace)}


def test_the_worktree_survives_a_skip_and_only_changed_files_are_written(
        loop: dict[str, Any]) -> None:
    _resolving(loop)
    wt: Path = loop["wt"]
    assert _state(loop)["ready"] is True and "<<<<<<<" in (wt / "src/util.py").read_text()
    keep = [wt / "docs" / f"keep{i}.txt" for i in range(5)] + [wt / "README"]
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in [wt, *keep]}
    res = run_carry(*loop["args"], "--skip")
    assert res.code == 1 and "CONFLICT in 0004-P4-h1-again.patch" in res.out, res.out
    assert f"resolve in {wt}" in res.out
    # the same folder, and the files the two stops share were not written again
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in [wt, *keep]} == before
    # what differs was: 0003's file is there now, 0004's conflict is in util.py
    assert (wt / "pkg/m3.py").read_text() == "X = 3\n"
    assert "<<<<<<<" in (wt / "src/util.py").read_text()
    assert git(wt, "status", "--porcelain", "--untracked-files=no").splitlines() == [
        "UU src/util.py"]
    state = _state(loop)
    assert state["position"] == 3 and state["ready"] is True
    assert git(wt, "rev-parse", "HEAD") == state["head"]
    assert len(git(loop["up"].path, "worktree", "list").splitlines()) == 2  # one, not two


def test_a_stop_makes_no_worktree_and_continue_makes_it(loop: dict[str, Any]) -> None:
    up: CommitBuilder = loop["up"]
    text = run_carry(*loop["args"], "--onto", "main", "--branch", "text")
    assert text.code == 1 and "CONFLICT in 0002-P2-h1.patch" in text.out, text.err
    lines = text.out.splitlines()
    assert "  0004 would conflict too: builds on 0002, which conflicts" in lines, text.out
    hint = lines.index("  (it checks the conflict out in its worktree; resolve there, then "
                       "--continue)")
    assert lines[hint - 1].startswith("  next: carry rebase --repo ")
    assert lines[hint - 1].endswith(" --resolve --series-dir " + str(loop["root"]))
    assert lines[hint + 1] == "  or --skip to leave 0002 out, --abort to undo the rebase"
    assert not loop["wt"].exists() and _state(loop)["ready"] is False
    assert run_carry(*loop["args"], "--abort").code == 0
    res = run_carry(*loop["args"], "--onto", "main", "--json")
    assert res.code == 1, res.err
    [doc] = json.loads(res.out)
    assert _statuses(doc) == ["applied", "conflict", "pending", "would-conflict",
                              "would-conflict", "pending", "pending"]
    assert doc["conflict"]["worktree"] == "" and doc["conflict"]["paths"] == ["src/util.py"]
    state = _state(loop)
    assert state["ready"] is False and state["phase"] == "conflict"
    assert not loop["wt"].exists() and not (up.path.parent / f"{up.path.name}.carry").exists()
    assert len(git(up.path, "worktree", "list").splitlines()) == 1
    status = run_carry("status", "demo", "--repo", str(up.path), "--series-dir",
                       str(loop["root"]), "--json")
    assert json.loads(status.out)["series"][0]["stopped"][0]["worktree"] == ""
    # --skip needs no worktree either
    res = run_carry(*loop["args"], "--skip", "--json")
    assert res.code == 1 and json.loads(res.out)[0]["conflict"]["file"] == \
        "0004-P4-h1-again.patch"
    assert not loop["wt"].exists()
    # a maintainer who wants to resolve asks with --resolve: the worktree is made, and the
    # rebase stays where it is (nothing was resolved yet)
    res = run_carry(*loop["args"], "--resolve")
    assert res.code == 1 and f"resolve in {loop['wt']}" in res.out, res.out
    assert "CONFLICT in 0004-P4-h1-again.patch" in res.out
    assert _state(loop)["ready"] is True and _state(loop)["position"] == 3
    assert "<<<<<<<" in (loop["wt"] / "src/util.py").read_text()
    (loop["wt"] / "src/util.py").write_text(util(h1=12))
    res = run_carry(*loop["args"], "--continue", "--json")
    assert res.code == 1 and json.loads(res.out)[0]["conflict"]["file"] == "0005-P5-f.patch"
    assert _state(loop)["ready"] is True  # a worktree once made follows the rebase
    res = run_carry(*loop["args"], "--skip", "--json")
    assert res.code == 0, res.err
    assert _statuses(json.loads(res.out)[0]) == ["applied", "skipped", "applied", "applied",
                                                 "skipped", "applied", "applied"]
    assert not loop["wt"].exists() and len(git(up.path, "worktree", "list").splitlines()) == 1


def test_skip_merges_nothing_and_takes_the_trials_commits(loop: dict[str, Any],
                                                          tmp_path: Path) -> None:
    trace, env = _traced(tmp_path)
    assert run_carry(*loop["args"], "--onto", "main", "--json", env=env).code == 1
    assert trace.read_text(), "the first call merges: the trace must see it"
    trial = [p["commit"] for p in _state(loop)["trial"]]
    assert trial[2] and trial[5] and trial[6] and not trial[1] and not trial[3]
    trace.write_text("")
    first = run_carry(*loop["args"], "--skip", "--json", env=env)
    assert first.code == 1, first.err
    second = run_carry(*loop["args"], "--skip", "--json", env=env)
    assert second.code == 1, second.err
    assert trace.read_text() == "", "a --skip merged again instead of taking the trial"
    assert _state(loop)["position"] == 4 and _state(loop)["trial"][6]["commit"] == trial[6]
    last = run_carry(*loop["args"], "--skip", "--json", env=env)
    assert last.code == 0, last.err
    assert trace.read_text() == ""
    [doc] = json.loads(last.out)
    assert [doc["patches"][i]["commit"] for i in (2, 5, 6)] == [trial[2], trial[5], trial[6]]
    assert git(loop["up"].path, "rev-parse", "carry/demo/main") == trial[6]


def test_a_skip_loop_gives_what_fresh_replays_give(loop: dict[str, Any]) -> None:
    """The same loop twice: once taking the trial, once with the trial taken out of the
    state at every stop (so each --skip replays for real). Same outcome, same trees."""
    up: CommitBuilder = loop["up"]

    def skip_loop(branch: str, fresh: bool) -> tuple[list[str], list[str]]:
        res = run_carry(*loop["args"], "--onto", "main", "--branch", branch, "--json")
        while res.code == 1:
            if fresh:
                state = _state(loop)
                loop["state"].write_text(json.dumps({**state, "trial": []}))
            res = run_carry(*loop["args"], "--skip", "--json")
        assert res.code == 0, res.err
        trees = git(up.path, "log", "--reverse", "--format=%T %s", f"main..{branch}")
        return _statuses(json.loads(res.out)[0]), trees.splitlines()

    assert skip_loop("kept", fresh=False) == skip_loop("fresh", fresh=True)


def test_continue_with_a_resolution_replays_the_rest(loop: dict[str, Any],
                                                     tmp_path: Path) -> None:
    """Resolving 0002 to the patch's own line makes 0004 apply: the forecast said it would
    conflict, and a real replay (not the trial) finds that it does not."""
    trace, env = _traced(tmp_path)
    _resolving(loop)
    assert _state(loop)["patches"][3]["status"] == "would-conflict"
    old_trial = _state(loop)["trial"]
    (loop["wt"] / "src/util.py").write_text(util(h1=11))
    trace.write_text("")
    res = run_carry(*loop["args"], "--continue", env=env)
    assert res.code == 1 and "CONFLICT in 0005-P5-f.patch" in res.out, res.out
    assert trace.read_text(), "a resolution must replay the rest for real"
    state = _state(loop)
    assert [p["status"] for p in state["patches"]] == [
        "applied", "applied", "applied", "applied", "conflict", "pending", "pending"]
    assert state["patches"][1]["reason"] == "conflict resolved"
    assert state["trial"] != old_trial and state["trial"][3]["commit"] == \
        state["patches"][3]["commit"]  # the new trial starts from the resolution
    assert "<<<<<<<" in (loop["wt"] / "src/core.py").read_text()
    res = run_carry(*loop["args"], "--skip", "--json")
    assert res.code == 0, res.err
    assert _statuses(json.loads(res.out)[0]) == ["applied"] * 4 + ["skipped"] + ["applied"] * 2
    up = loop["up"].path
    assert git(up, "show", "carry/demo/main:src/util.py") == util(h1=12, h15=150).strip()
    assert git(up, "show", "carry/demo/main:src/core.py") == "def f():\n    return 30"
    assert not loop["wt"].exists()


def test_a_resolution_is_never_judged_by_the_old_trial(loop: dict[str, Any]) -> None:
    """0005 is the next would-conflict right after 0004, so no trial commit lies between
    them to show that the head moved: the resolution of 0004 (which also puts back the
    `f` that 0005 expects) must still be replayed, and 0005 then applies."""
    assert run_carry(*loop["args"], "--onto", "main").code == 1
    assert run_carry(*loop["args"], "--skip").code == 1
    assert run_carry(*loop["args"], "--resolve").code == 1  # makes the worktree
    (loop["wt"] / "src/util.py").write_text(util(h1=12))
    (loop["wt"] / "src/core.py").write_text("def f():\n    return 1\n")
    res = run_carry(*loop["args"], "--continue", "--json")
    assert res.code == 0, res.out
    assert _statuses(json.loads(res.out)[0]) == ["applied", "skipped"] + ["applied"] * 5
    assert git(loop["up"].path, "show", "carry/demo/main:src/core.py") == \
        "def f():\n    return 5"


def test_abort_after_a_skip_with_the_kept_worktree_leaves_the_repo_identical(
        loop: dict[str, Any]) -> None:
    up: CommitBuilder = loop["up"]
    git(up.path, "update-ref", "-m", "carry rebase demo onto base", "refs/heads/carry/demo/main",
        up.rev("base"))
    before = _snapshot(up.path)
    _resolving(loop)
    (loop["wt"] / "scratch.txt").write_text("a maintainer's notes\n")
    assert run_carry(*loop["args"], "--skip").code == 1
    assert (loop["wt"] / "scratch.txt").exists()  # kept: the worktree was moved, not remade
    res = run_carry(*loop["args"], "--abort")
    assert res.code == 0, res.err
    assert _snapshot(up.path) == before
    assert not (up.path.parent / f"{up.path.name}.carry").exists()
    assert not list((up.path / ".git" / "carry" / "rebase").rglob("*.json"))


def test_a_worktree_left_half_moved_is_moved_again_not_taken(loop: dict[str, Any]) -> None:
    """A kill between the state of the next stop and the worktree's move leaves `ready`
    false: --continue then takes nothing from the worktree (which still holds the last
    stop, here resolved), and --resolve moves it to this stop."""
    _resolving(loop)
    assert run_carry(*loop["args"], "--skip", "--json").code == 1
    state = _state(loop)
    assert state["ready"] is True  # the kept worktree was moved along, even under --json
    (loop["wt"] / "src/util.py").write_text(util(h1=12))  # resolved, as if for 0004...
    loop["state"].write_text(json.dumps({**state, "ready": False}))  # ...but not moved yet
    res = run_carry(*loop["args"], "--continue")
    assert res.code == 2 and "--resolve" in res.err and _state(loop)["position"] == 3
    assert (loop["wt"] / "src/util.py").read_text() == util(h1=12)
    res = run_carry(*loop["args"], "--resolve")
    assert res.code == 1 and "CONFLICT in 0004-P4-h1-again.patch" in res.out, res.out
    assert "<<<<<<<" in (loop["wt"] / "src/util.py").read_text()
    assert _state(loop)["ready"] is True and _state(loop)["position"] == 3


def test_a_trial_that_does_not_fit_is_replayed_and_a_damaged_one_refused(
        loop: dict[str, Any]) -> None:
    up: CommitBuilder = loop["up"]
    assert run_carry(*loop["args"], "--onto", "main", "--json").code == 1
    state = _state(loop)
    other = up.rev("main")  # a real commit, but not what the trial made
    wrong = [{**p, "commit": other} if p["commit"] and i > 1 else p
             for i, p in enumerate(state["trial"])]
    loop["state"].write_text(json.dumps({**state, "trial": wrong}))
    res = run_carry(*loop["args"], "--skip", "--json")
    assert res.code == 1 and json.loads(res.out)[0]["conflict"]["file"] == \
        "0004-P4-h1-again.patch"
    assert _state(loop)["patches"][2]["commit"] not in ("", other)  # replayed for real
    state = _state(loop)
    for bad in ({**state, "trial": state["trial"][:2]},
                {**state, "trial": [{**p, "commit": "HEAD"} for p in state["trial"]]},
                {**state, "ready": "yes"}):
        loop["state"].write_text(json.dumps(bad))
        res = run_carry(*loop["args"], "--skip")
        assert res.code == 2 and "is damaged" in res.err, res.err
        assert len(res.err.strip().splitlines()) == 1


# carry looks syncfs up in libc right before it calls it (ctypes raises an audit event for
# the lookup, none for the call itself)
_SYNCFS_SPY = """
import sys
log = sys.argv[1]
def hook(event, args):
    if event == "ctypes.dlsym" and args[1] == "syncfs":
        with open(log, "a") as fh:
            fh.write("syncfs\\n")
sys.addaudithook(hook)
sys.argv = ["carry", *sys.argv[2:]]
from carry.cli.main import main
main()
"""


def test_no_syncfs_on_the_conflict_path(loop: dict[str, Any], tmp_path: Path) -> None:
    """A --refresh finished by --continue writes the series: file by file, not one syncfs of
    the whole filesystem, which would wait for every file of the worktree just written. An
    import, off the conflict path, still uses its one syncfs (so the spy does see it)."""
    log = tmp_path / "syncfs.log"

    def spied(*args: str) -> int:
        return subprocess.run([sys.executable, "-c", _SYNCFS_SPY, str(log), *args],
                              env=dict(os.environ), capture_output=True, cwd=tmp_path).returncode

    git(loop["root"].parent, "init", "-q")
    assert spied(*loop["args"], "--onto", "main", "--refresh") == 1
    assert spied(*loop["args"], "--resolve") == 1  # the worktree, made
    (loop["wt"] / "src/util.py").write_text(util(h1=11))
    assert spied(*loop["args"], "--continue") == 1
    (loop["wt"] / "src/core.py").write_text("def f():\n    return 5\n")
    assert spied(*loop["args"], "--continue") == 0
    assert "conflicts resolved in 0002, 0005" in (loop["root"] / "demo" / "series.toml"
                                                   ).read_text()  # the refresh was written
    assert not log.exists() or log.read_text() == ""
    assert spied("import", "again", "--repo", str(loop["up"].path), "--branch", "feature",
                 "--base", "base", "--series-dir", str(loop["root"])) == 0
    assert log.read_text().count("syncfs") >= 1
