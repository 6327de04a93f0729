"""A stopped rebase as git users work it: run inside a conflict worktree, --continue, --skip,
--abort, --quit and --show-current-patch take the rebase that worktree belongs to, and a
worktree carry removes leaves the shell in a folder that still exists; --show-current-patch
prints the stopped patch as git show does; --quit keeps what is done. Real git, the CLI."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from carry.git.worktrees import MARK
from tests.conftest import CommitBuilder, conflicting_series, git, run_carry, util


def _stopped_twice(up: CommitBuilder, root: Path) -> tuple[str, ...]:
    """Series demo (two patches, the second conflicting on main and on other), stopped onto
    both targets, each with its conflict worktree made."""
    git(up.path, "checkout", "-q", "-b", "feature", "base")
    up.commit("One: h1", {"src/util.py": util(h1=10)})
    up.commit("Two: h10", {"src/util.py": util(h1=10, h10=100)})
    up.checkout("main")
    up.commit("Upstream h10", {"src/util.py": util(h10=101)})
    up.branch("other")
    sd = ("--series-dir", str(root))
    assert run_carry("import", "demo", "--repo", str(up.path), "--range", "base..feature",
                     *sd).code == 0
    repo = ("--repo", str(up.path))
    assert run_carry("rebase", "demo", *repo, "--onto", "main", "--onto", "other",
                     *sd).code == 1
    for target in ("main", "other"):  # the worktrees, asked for
        assert run_carry("rebase", *repo, "--resolve", "--target", target, *sd).code == 1
    return sd


def _state(up: CommitBuilder, target: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (up.path / f".git/carry/rebase/demo/{target}.json").read_text())
    return data


def test_inside_a_worktree_the_worktree_says_which_rebase(
        upstream: CommitBuilder, series_root: Path) -> None:
    sd = _stopped_twice(upstream, series_root)
    env = {"CARRY_SERIES_DIR": sd[1]}
    wt_main = Path(str(_state(upstream, "main")["worktree"]))
    wt_other = Path(str(_state(upstream, "other")["worktree"]))
    shown = run_carry("rebase", "--show-current-patch", cwd=wt_main / "src", env=env)
    assert shown.code == 0, shown.err
    assert "Two: h10" in shown.out and "+    return 100" in shown.out
    (wt_main / "src" / "util.py").write_text(util(h1=10, h10=1000))
    inode = os.stat(wt_main).st_ino
    done = run_carry("rebase", "--continue", "--json", cwd=wt_main, env=env)
    assert done.code == 0, done.err
    [d] = json.loads(done.out)
    assert d["target"] == "main" and d["status"] == "applied"
    assert upstream.rev("carry/demo/main") == d["head"]
    # the shell's folder is still there, empty, and carry says where to go
    assert wt_main.is_dir() and list(wt_main.iterdir()) == []
    assert os.stat(wt_main).st_ino == inode
    assert f"cd {upstream.path}" in done.err
    assert _state(upstream, "other")["phase"] == "conflict"  # the other rebase untouched
    inode = os.stat(wt_other).st_ino
    quit_ = run_carry("rebase", "--quit", "--json", cwd=wt_other, env=env)
    assert quit_.code == 0, quit_.err
    [q] = json.loads(quit_.out)
    assert q["target"] == "other" and list(wt_other.iterdir()) == []
    assert not list((upstream.path / ".git/carry/rebase/demo").glob("*.json"))
    # the next worktree made there goes into the same folder: a shell left in it sees it
    upstream.checkout("other")  # a conflict the resolution recorded on main does not fit
    upstream.commit("Upstream h10 again", {"src/util.py": util(h10=102)})
    upstream.checkout("main")
    assert run_carry("rebase", "demo", "--repo", str(upstream.path), "--onto", "other",
                     *sd).code == 1
    again = run_carry("rebase", "--repo", str(upstream.path), "--resolve", *sd)
    assert again.code == 1, again.err
    assert (wt_other / "src" / "util.py").is_file() and os.stat(wt_other).st_ino == inode
    assert git(wt_other, "status", "--porcelain").startswith("UU src/util.py")


def _stopped_once(up: CommitBuilder, root: Path) -> tuple[str, ...]:
    """`conflicting_series`, applied onto base, then stopped onto main at 0002."""
    args = conflicting_series(up, root)
    assert run_carry("apply", "demo", "--onto", "base", "--branch", "carry/demo/main",
                     *args).code == 0
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    return args


def test_show_current_patch_is_git_show_of_the_stopped_patch(
        upstream: CommitBuilder, series_root: Path) -> None:
    args = _stopped_once(upstream, series_root)
    state = _state(upstream, "main")
    source = state["patches"][state["position"]]["source"]  # type: ignore[index]
    r = run_carry("rebase", "--show-current-patch", *args)  # no worktree needed
    assert r.code == 0, r.err
    assert r.out == git(upstream.path, "show", "--no-color", source) + "\n"
    assert r.out.startswith(f"commit {source}\n") and "    Two: h10" in r.out
    j = json.loads(run_carry("rebase", "--show-current-patch", "--json", *args).out)
    assert [(x["patch"], x["commit"], x["phase"]) for x in j] == [
        ("0002-Two-h10.patch", source, "conflict")]
    assert _state(upstream, "main") == state  # read only


def test_quit_drops_the_state_and_worktree_and_keeps_every_ref(
        upstream: CommitBuilder, series_root: Path) -> None:
    args = _stopped_once(upstream, series_root)
    applied = upstream.rev("carry/demo/main")
    assert run_carry("rebase", "--resolve", *args).code == 1  # the worktree
    state = _state(upstream, "main")
    wt = Path(str(state["worktree"]))
    assert wt.is_dir()
    r = run_carry("rebase", "--quit", *args)
    assert r.code == 0, r.err
    head = str(state["head"])
    assert f"carry/demo/main stays at {applied[:12]}" in r.out and head in r.out
    assert upstream.rev("carry/demo/main") == applied  # nothing put back, nothing moved
    assert not wt.exists() and not (upstream.path / ".git/carry/rebase/demo/main.json").exists()
    # what was done is kept: the first patch, replayed onto main
    assert git(upstream.path, "log", "-1", "--format=%s %P", head) == \
        f"One: h1 {upstream.rev('main')}"
    again = run_carry("rebase", "--quit", *args)
    assert again.code == 2 and "no carry rebase" in again.err


def test_an_emptied_folder_a_killed_worktree_add_left_locked_is_made_again(
        upstream: CommitBuilder, series_root: Path) -> None:
    """The folder a shell was left in is reused; so is one that a `kill -9` of `git worktree
    add` left empty, registered and under git's "initializing" lock."""
    args = _stopped_once(upstream, series_root)
    wt = upstream.path.parent / f"{upstream.path.name}.carry" / "demo" / "main"
    git(upstream.path, "worktree", "add", "-q", "--detach", str(wt), "main")
    git(upstream.path, "worktree", "lock", "--reason", "initializing", str(wt))
    for entry in wt.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    r = run_carry("rebase", "--resolve", *args)
    assert r.code == 1, r.err
    assert git(wt, "status", "--porcelain").startswith("UU src/util.py")


@pytest.mark.parametrize("cut", ["HEAD", "commondir"])
@pytest.mark.parametrize("then", ["--abort", "--resolve"])
def test_a_worktree_a_killed_add_left_half_made_is_forgotten(
        upstream: CommitBuilder, series_root: Path, cut: str, then: str) -> None:
    """A `kill -9` inside `git worktree add --lock` leaves the worktree registered under
    carry's lock with a file not yet written: HEAD missing (`worktree remove` refuses
    it, `prune` skips it), or commondir created and still empty, which makes every `git
    worktree` command die. `--abort` leaves no worktree but the repository's own;
    `--continue` makes the conflict worktree again."""
    args = _stopped_once(upstream, series_root)
    assert run_carry("rebase", "--resolve", *args).code == 1  # the worktree, made
    wt = upstream.path.parent / f"{upstream.path.name}.carry" / "demo" / "main"
    admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
    (admin / "locked").write_text(f"{MARK}\n")  # as `add --lock` leaves it, killed mid-way
    if cut == "HEAD":
        (admin / "HEAD").unlink()
    else:
        (admin / "commondir").write_bytes(b"")
    state = upstream.path / ".git/carry/rebase/demo/main.json"
    state.write_text(json.dumps({**json.loads(state.read_text()), "ready": False}))
    r = run_carry("rebase", then, *args)  # as after a kill before the worktree was ready
    assert r.code == (0 if then == "--abort" else 1), r.err
    listed = git(upstream.path, "worktree", "list", "--porcelain")
    if then == "--abort":
        assert listed.count("worktree ") == 1
        assert not wt.exists() and not list((upstream.path / ".git").glob("worktrees/*/locked"))
    else:
        assert listed.count("worktree ") == 2 and "initializing" not in listed
        assert git(wt, "status", "--porcelain").startswith("UU src/util.py")


def test_a_half_made_worktree_of_a_gone_folder_does_not_break_the_next_one(
        upstream: CommitBuilder, series_root: Path, tmp_path: Path) -> None:
    """A validation killed inside `git worktree add` leaves a half-made worktree (commondir
    empty) whose scratch folder is later swept: git can no longer add any worktree. The next
    conflict worktree is still made, and that entry is gone."""
    args = _stopped_once(upstream, series_root)
    other = tmp_path / "scratch" / "v2"
    git(upstream.path, "worktree", "add", "-q", "--detach", str(other), "main")
    admin = Path(git(other, "rev-parse", "--absolute-git-dir"))
    (admin / "locked").write_text("initializing\n")
    (admin / "commondir").write_bytes(b"")
    shutil.rmtree(other)
    r = run_carry("rebase", "--resolve", *args)
    assert r.code == 1, r.err
    assert not admin.exists()
    assert git(upstream.path, "worktree", "list", "--porcelain").count("worktree ") == 2
