"""What carry creates, it may remove; nothing else (F15). The conflict worktree's path
`../REPO.carry/NAME/TARGET` may already hold a user's folder, another clone with a commit of
its own, a worktree of another repository, a worktree of this repository on the user's own
branch, a symbolic link or a file: `rebase --resolve` and `carry edit` refuse in one line
naming the path, and change nothing there; `--abort` leaves it as it is. A worktree that holds
untracked files is not taken by `--continue` (F16 #6): the files are named, nothing lost.
`--resolve` is the step that makes the worktree; `--continue` only continues (F16)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CommitBuilder, conflicting_series, git, run_carry, util


def _fingerprint(path: Path) -> dict[str, str]:
    """Every file under `path` (a link as its target), and for a git checkout its HEAD,
    branch and status: what a refusal must leave as it was."""
    if path.is_symlink() or path.is_file():
        return {"": str(path.readlink()) if path.is_symlink() else path.read_text()}
    out = {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
           for p in sorted(path.rglob("*")) if p.is_file() and ".git" not in p.parts}
    if (path / ".git").exists():
        out["HEAD"] = git(path, "rev-parse", "HEAD")
        out["branch"] = git(path, "symbolic-ref", "-q", "--short", "HEAD")
        out["status"] = git(path, "status", "--porcelain", "--untracked-files=all")
    return out


def _user_folder(up: CommitBuilder, wt: Path) -> None:
    wt.mkdir(parents=True)
    (wt / "notes.txt").write_text("mine\n")


def _other_clone(up: CommitBuilder, wt: Path) -> None:
    git(up.path.parent, "clone", "-q", str(up.path), str(wt))
    (wt / "local.txt").write_text("only here\n")
    git(wt, "add", "local.txt")
    git(wt, "-c", "user.name=A U Thor", "-c", "user.email=author@example.com", "commit",
        "-q", "-m", "local only")
    (wt / "README").write_text("uncommitted\n")


def _other_repo_worktree(up: CommitBuilder, wt: Path) -> None:
    other = CommitBuilder.init(up.path.parent / "other repo")
    other.commit("Other", {"a.txt": "a\n"})
    git(other.path, "worktree", "add", "-q", "-b", "theirs", str(wt))
    (wt / "a.txt").write_text("work in progress\n")


def _own_branch_worktree(up: CommitBuilder, wt: Path) -> None:
    git(up.path, "worktree", "add", "-q", "-b", "mine", str(wt), "main")
    (wt / "src" / "util.py").write_text("uncommitted work\n")
    (wt / "new.txt").write_text("untracked work\n")


def _symlink(up: CommitBuilder, wt: Path) -> None:
    target = up.path.parent / "elsewhere with spaces"
    target.mkdir()
    (target / "keep.txt").write_text("keep\n")
    wt.parent.mkdir(parents=True)
    wt.symlink_to(target)


def _empty_symlink(up: CommitBuilder, wt: Path) -> None:
    target = up.path.parent / "empty elsewhere"
    target.mkdir()
    wt.parent.mkdir(parents=True)
    wt.symlink_to(target)


def _file(up: CommitBuilder, wt: Path) -> None:
    wt.parent.mkdir(parents=True)
    wt.write_text("a file, not a folder\n")


TAKEN: dict[str, Callable[[CommitBuilder, Path], None]] = {
    "user folder": _user_folder, "other clone": _other_clone,
    "other repo's worktree": _other_repo_worktree, "own branch worktree": _own_branch_worktree,
    "symlink": _symlink, "symlink to an empty folder": _empty_symlink, "file": _file}


@pytest.mark.parametrize("kind", sorted(TAKEN))
def test_resolve_refuses_a_path_carry_did_not_make(upstream: CommitBuilder, series_root: Path,
                                                   kind: str) -> None:
    args = conflicting_series(upstream, series_root)
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    wt = upstream.path.parent / f"{upstream.path.name}.carry" / "demo" / "main"
    TAKEN[kind](upstream, wt)
    before = _fingerprint(wt)
    state = upstream.path / ".git/carry/rebase/demo/main.json"
    saved = state.read_bytes()
    r = run_carry("rebase", "--resolve", *args)
    assert r.code == 2 and str(wt) in r.err and "move it away" in r.err, (r.code, r.err)
    assert len(r.err.strip().splitlines()) == 1
    assert _fingerprint(wt) == before and state.read_bytes() == saved
    r = run_carry("rebase", "--abort", *args)  # leaves it as it is
    assert r.code == 0, r.err
    assert _fingerprint(wt) == before
    assert not state.exists()


@pytest.mark.parametrize("kind", sorted(TAKEN))
def test_edit_refuses_a_path_carry_did_not_make(upstream: CommitBuilder, series_root: Path,
                                                kind: str) -> None:
    args = conflicting_series(upstream, series_root)
    first = run_carry("edit", "demo", "1", "--json", *args)
    assert first.code == 0, first.err
    wt = Path(json.loads(first.out)["worktree"])
    assert run_carry("rebase", "--abort", *args).code == 0 and not wt.exists()
    TAKEN[kind](upstream, wt)
    before = _fingerprint(wt)
    branches = git(upstream.path, "for-each-ref", "refs/heads")
    r = run_carry("edit", "demo", "1", *args)
    assert r.code == 2 and str(wt) in r.err and "move it away" in r.err, (r.code, r.err)
    assert _fingerprint(wt) == before
    assert git(upstream.path, "for-each-ref", "refs/heads") == branches
    assert not list((upstream.path / ".git/carry/rebase").rglob("*.json"))  # nothing started


def test_a_worktree_replaced_during_a_stop_is_not_removed(upstream: CommitBuilder,
                                                          series_root: Path) -> None:
    """carry's worktree removed by the user and the path reused for the user's own branch:
    --continue refuses to read it, and --abort leaves it as it is."""
    args = conflicting_series(upstream, series_root)
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    assert run_carry("rebase", "--resolve", *args).code == 1
    wt = upstream.path.parent / f"{upstream.path.name}.carry" / "demo" / "main"
    git(upstream.path, "worktree", "remove", "--force", "--force", str(wt))
    _own_branch_worktree(upstream, wt)
    before = _fingerprint(wt)
    r = run_carry("rebase", "--continue", *args)
    assert r.code == 2 and str(wt) in r.err, r.err
    assert _fingerprint(wt) == before
    r = run_carry("rebase", "--abort", *args)
    assert r.code == 0 and f"left {wt} as it is" in r.err, r.err
    assert _fingerprint(wt) == before


def test_a_path_with_spaces_and_odd_names_works(tmp_path: Path, series_root: Path) -> None:
    up = CommitBuilder.init(tmp_path / "my repo -x ü")
    up.commit("Initial import", {"src/core.py": "def f():\n    return 1\n"})
    up.commit("Add helpers", {"src/util.py": util()})
    up.tag("base")
    args = conflicting_series(up, series_root)
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    r = run_carry("rebase", "--resolve", "--json", *args)
    assert r.code == 1, r.err
    wt = Path(json.loads(r.out)[0]["conflict"]["worktree"])
    assert wt.name == "main" and "<<<<<<<" in (wt / "src/util.py").read_text()
    (wt / "src/util.py").write_text(util(h1=10, h10=1001))
    r = run_carry("rebase", "--continue", *args)
    assert r.code == 0, r.err
    assert not wt.exists()


def test_continue_refuses_untracked_files_in_the_edit_worktree(upstream: CommitBuilder,
                                                               series_root: Path) -> None:
    """F16 #6: a file left untracked in `carry edit`'s worktree was lost with it."""
    args = conflicting_series(upstream, series_root)
    r = run_carry("edit", "demo", "1", "--json", *args)
    assert r.code == 0, r.err
    wt = Path(json.loads(r.out)["worktree"])
    (wt / "src/util.py").write_text(util(h1=12))
    (wt / "src/new module.py").write_text("X = 1\n")
    r = run_carry("rebase", "--continue", *args)
    assert r.code == 2 and "src/new module.py" in r.err and "untracked" in r.err, r.err
    assert (wt / "src/new module.py").read_text() == "X = 1\n"
    git(wt, "add", "src/new module.py")
    r = run_carry("rebase", "--continue", "--json", *args)
    assert r.code == 0, r.err
    branch = json.loads(r.out)[0]["branch"]
    assert git(upstream.path, "show", f"{branch}~1:src/new module.py") == "X = 1"


def test_continue_refuses_untracked_files_in_the_conflict_worktree(
        upstream: CommitBuilder, series_root: Path) -> None:
    args = conflicting_series(upstream, series_root)
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    r = run_carry("rebase", "--resolve", "--json", *args)
    wt = Path(json.loads(r.out)[0]["conflict"]["worktree"])
    (wt / "src/util.py").write_text(util(h1=10, h10=1001))
    (wt / "scratch.txt").write_text("notes\n")
    r = run_carry("rebase", "--continue", *args)
    assert r.code == 2 and "scratch.txt" in r.err, r.err
    assert (wt / "scratch.txt").exists()
    (wt / "scratch.txt").unlink()
    assert run_carry("rebase", "--continue", *args).code == 0


def test_resolve_makes_the_worktree_and_continue_only_continues(
        upstream: CommitBuilder, series_root: Path) -> None:
    args = conflicting_series(upstream, series_root)
    stop = run_carry("rebase", "demo", "--onto", "main", *args)
    assert stop.code == 1 and " --resolve" in stop.out, stop.out
    wt = upstream.path.parent / f"{upstream.path.name}.carry" / "demo" / "main"
    assert not wt.exists()
    r = run_carry("rebase", "--continue", *args)  # nothing resolved: refused, nothing made
    assert r.code == 2 and "--resolve" in r.err and not wt.exists(), r.err
    r = run_carry("rebase", "--resolve", *args)
    assert r.code == 1 and f"resolve in {wt}" in r.out and " --continue" in r.out, r.out
    (wt / "src/util.py").write_text(util(h1=10, h10=1001))
    again = run_carry("rebase", "--resolve", *args)  # the resolution under way is kept
    assert again.code == 1 and (wt / "src/util.py").read_text() == util(h1=10, h10=1001)
    assert run_carry("rebase", "--continue", *args).code == 0
    r = run_carry("rebase", "demo", "--resolve", *args)
    assert r.code == 2 and "no carry rebase" in r.err, r.err


def _three_stops(up: CommitBuilder, root: Path) -> tuple[str, ...]:
    """Three patches onto a moved main: 0002 and 0003 both conflict."""
    git(up.path, "checkout", "-q", "-b", "feature", "base")
    up.commit("One: h1", {"src/util.py": util(h1=10)})
    up.commit("Two: h10", {"src/util.py": util(h1=10, h10=100)})
    up.commit("Three: f", {"src/core.py": "def f():\n    return 3\n"})
    up.checkout("main")
    up.commit("Upstream h10", {"src/util.py": util(h10=101)})
    up.commit("Upstream f", {"src/core.py": "def f():\n    return 30\n"})
    args = ("--repo", str(up.path), "--series-dir", str(root))
    assert run_carry("import", "demo", "--range", "base..feature", *args).code == 0
    return args


@pytest.mark.parametrize("then", ["--skip", "--resolve"])
def test_gc_prune_now_during_a_stop_loses_nothing(upstream: CommitBuilder, series_root: Path,
                                                  then: str) -> None:
    """F15: the stop's commits (the replayed patches, the trial a --skip takes) were
    referenced by nothing but the state file: `git gc --prune=now` during the stop made
    --continue and --skip fail with "unknown object"."""
    args = _three_stops(upstream, series_root)
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    git(upstream.path, "gc", "-q", "--prune=now")
    r = run_carry("rebase", then, *args)
    assert r.code == 1 and "CONFLICT" in r.out, r.err
    if then == "--resolve":
        wt = upstream.path.parent / f"{upstream.path.name}.carry" / "demo" / "main"
        (wt / "src/util.py").write_text(util(h1=10, h10=1001))
        git(upstream.path, "gc", "-q", "--prune=now")
        r = run_carry("rebase", "--continue", *args)  # and stops at 0003
        assert r.code == 1 and "CONFLICT" in r.out, r.err
    git(upstream.path, "gc", "-q", "--prune=now")
    r = run_carry("rebase", "--skip", *args)
    assert r.code == 0, r.err
    assert git(upstream.path, "fsck", "--no-dangling", "--connectivity-only") == ""
    assert git(upstream.path, "for-each-ref", "refs/carry/stops") == ""  # gone with the stop


def test_abort_and_quit_drop_the_refs_that_kept_a_stop(upstream: CommitBuilder,
                                                        series_root: Path) -> None:
    args = _three_stops(upstream, series_root)
    for end in ("--abort", "--quit"):
        assert run_carry("rebase", "demo", "--onto", "main", "--force", *args).code == 1
        assert git(upstream.path, "for-each-ref", "refs/carry/stops") != ""
        assert run_carry("rebase", end, *args).code == 0
        assert git(upstream.path, "for-each-ref", "refs/carry/stops") == ""


def test_a_resolution_that_takes_the_patchs_whole_file_names_what_it_undoes(
        upstream: CommitBuilder, series_root: Path) -> None:
    """F16 #12: `git checkout --theirs F` resolves the conflict and also reverts the target's
    clean change to F elsewhere (h3 here). `--continue` names the undone line and asks for
    `--force`; a resolution that keeps it goes on."""
    args = conflicting_series(upstream, series_root)
    upstream.commit("Upstream h3", {"src/util.py": util(h3=303, h10=101)})
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    r = run_carry("rebase", "--resolve", "--json", *args)
    wt = Path(json.loads(r.out)[0]["conflict"]["worktree"])
    git(wt, "checkout", "--theirs", "--", "src/util.py")
    assert (wt / "src/util.py").read_text() == util(h1=10, h10=100)
    r = run_carry("rebase", "--continue", *args)
    assert r.code == 2 and "undoes 1 line(s)" in r.err and "return 303" in r.err, r.err
    assert "--force" in r.err and (wt / "src/util.py").read_text() == util(h1=10, h10=100)
    (wt / "src/util.py").write_text(util(h1=10, h3=303, h10=100))  # keeps upstream's h3
    assert run_carry("rebase", "--continue", *args).code == 0


def test_force_keeps_a_whole_file_resolution(upstream: CommitBuilder,
                                             series_root: Path) -> None:
    args = conflicting_series(upstream, series_root)
    upstream.commit("Upstream h3", {"src/util.py": util(h3=303, h10=101)})
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    wt = Path(json.loads(run_carry("rebase", "--resolve", "--json", *args).out)[0]
              ["conflict"]["worktree"])
    git(wt, "checkout", "--theirs", "--", "src/util.py")
    r = run_carry("rebase", "--continue", "--force", *args)
    assert r.code == 0, r.err
    kept = git(upstream.path, "show", "carry/demo/main:src/util.py")
    assert kept.strip() == util(h1=10, h10=100).strip()


@pytest.mark.parametrize("left", ["renamed", "renamed and forgotten"])
@pytest.mark.parametrize("then", ["--skip", "--abort"])
def test_a_kill_inside_the_worktrees_removal_leaves_nothing_behind(
        upstream: CommitBuilder, series_root: Path, left: str, then: str) -> None:
    """carry removes its worktree by renaming it to a name of its own, forgetting it, then
    deleting it; a `kill -9` between any two steps leaves one of these states, and the next
    `--skip` or `--abort` clears it all (the slow tier's 50 kills once found a half-deleted
    worktree, no longer carry's by its `.git`, left forever)."""
    args = conflicting_series(upstream, series_root)
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    assert run_carry("rebase", "demo", "--resolve", *args).code == 1
    root = upstream.path.parent / "upstream.carry"
    wt = root / "demo" / "main"
    admin = git(wt, "rev-parse", "--absolute-git-dir")
    wt.rename(wt.with_name(".main.carry-removing"))
    if left == "renamed and forgotten":
        import shutil

        shutil.rmtree(admin)
    res = run_carry("rebase", "demo", then, *args)
    assert res.code == 0, res.err
    assert not root.exists(), sorted(root.rglob("*"))
    assert "upstream.carry" not in git(upstream.path, "worktree", "list", "--porcelain")


@pytest.mark.parametrize("then", ["--resolve", "--abort"])
def test_a_kill_inside_git_worktree_add_before_head_is_written_is_still_carrys(
        upstream: CommitBuilder, series_root: Path, then: str) -> None:
    """`git worktree add` writes carry's lock mark, the `.git` file, then a placeholder HEAD
    with a plain open and write (no rename): a kill between the two leaves an empty HEAD
    (and no commondir yet). That worktree is carry's own, made again or removed, never
    refused as someone else's (CI's 30 kills of --resolve once hit it, under load)."""
    args = conflicting_series(upstream, series_root)
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    assert run_carry("rebase", "demo", "--resolve", *args).code == 1
    wt = upstream.path.parent / "upstream.carry" / "demo" / "main"
    admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
    (admin / "HEAD").write_text("")
    (admin / "commondir").unlink()
    res = run_carry("rebase", "demo", then, *args)
    if then == "--resolve":
        assert res.code == 1 and f"resolve in {wt}" in res.out, res.err
        assert "<<<<<<<" in (wt / "src/util.py").read_text()
        assert run_carry("rebase", "demo", "--abort", *args).code == 0
    else:
        assert res.code == 0, res.err
    assert not (upstream.path.parent / "upstream.carry").exists()
    assert "upstream.carry" not in git(upstream.path, "worktree", "list", "--porcelain")


def test_a_worktrees_registration_goes_in_one_rename_and_a_kills_leftover_is_swept(
        upstream: CommitBuilder, series_root: Path) -> None:
    """carry forgets its worktree by moving the admin folder out of `.git/worktrees/` in one
    rename, then deleting it: a kill inside a plain delete would leave a folder there with
    its lock gone and its gitdir kept, which no later run could claim. What a kill leaves in
    carry's own `trash/` goes with the next removal."""
    args = conflicting_series(upstream, series_root)
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    assert run_carry("rebase", "demo", "--resolve", *args).code == 1
    trash = upstream.path / ".git" / "carry" / "trash"
    half = trash / "main.1.2"  # as a kill inside the delete leaves it
    half.mkdir(parents=True)
    (half / "gitdir").write_text(str(upstream.path.parent / "gone" / ".git") + "\n")
    assert run_carry("rebase", "demo", "--abort", *args).code == 0
    assert not (upstream.path / ".git" / "worktrees").exists() or not any(
        (upstream.path / ".git" / "worktrees").iterdir())
    assert not half.exists() and not any(trash.iterdir())
    assert "upstream.carry" not in git(upstream.path, "worktree", "list", "--porcelain")


def test_a_kill_inside_the_worktrees_add_leaves_only_what_the_next_run_clears(
        upstream: CommitBuilder, series_root: Path) -> None:
    """carry adds its worktree under `.TARGET.carry-adding`, points the registration at its
    place, then renames it there: git writes a worktree's files one by one, and a kill among
    them once left a `.git` nothing could prove was carry's. A kill before the rename leaves
    the staged folder, which `--abort` (or the next add) clears."""
    args = conflicting_series(upstream, series_root)
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    assert run_carry("rebase", "demo", "--resolve", *args).code == 1
    wt = upstream.path.parent / "upstream.carry" / "demo" / "main"
    staged = wt.with_name(".main.carry-adding")
    wt.rename(staged)  # as a kill before the rename leaves it
    assert run_carry("rebase", "demo", "--abort", *args).code == 0
    assert not (upstream.path.parent / "upstream.carry").exists()
    assert "upstream.carry" not in git(upstream.path, "worktree", "list", "--porcelain")
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1
    staged.mkdir(parents=True)
    (staged / "half.txt").write_text("a kill's leftover\n")
    res = run_carry("rebase", "demo", "--resolve", *args)  # the next add clears it
    assert res.code == 1 and f"resolve in {wt}" in res.out, res.err
    assert not staged.exists() and "<<<<<<<" in (wt / "src/util.py").read_text()
    assert run_carry("rebase", "demo", "--abort", *args).code == 0
