"""The conflict worktree of a stopped rebase (`../REPO.carry/NAME/TARGET`): one per series and
target, made only when a maintainer asks to resolve in it (`--continue` at a stop that has
none yet: on a tree of thousands of files a checkout costs seconds, and a loop that skips
every stop needs none), then kept from one stop to the next and moved there in place (git
writes only the files that differ, as `git cherry-pick --skip` does in its one worktree),
and removed by `--abort` and by the finish."""

from __future__ import annotations

import contextlib
from pathlib import Path

from carry.base.errors import CarryError
from carry.git import GitError, Repo
from carry.rebase import state as st
from carry.replay.engine import Conflict, Replayed, TargetResult
from carry.replay.targets import ResolvedTarget
from carry.series.store import Series


def stop(series: Series, repo: Repo, result: TargetResult, target: ResolvedTarget,
         branch: tuple[str, str | None], refresh: bool, done: Replayed,
         make: bool = False) -> None:
    """Save the state first, then put the stop in the conflict worktree it names: the one
    kept from the last stop is moved here in place, and one is made only when `make` (the
    maintainer asked for it with `--continue`). The state says `ready` only once the
    worktree holds this stop, so a kill in between leaves a state whose `--continue` takes
    nothing from a half-moved worktree (it moves it again) and whose `--abort` removes it."""
    step = result.patches[done.stop or 0]
    wt = st.worktree_path(repo, series.name, target.slug)
    if make:
        claim(repo, wt)  # before the state: a refusal changes nothing
    state = stop_state(series, repo, result, target, branch, refresh, done)
    path = st.state_path(repo, series.name, target.slug)
    st.write(repo, path, state)
    if make or repo.made_by_carry(wt):  # not the empty folder a shell was left in (remove)
        state.paths = checkout(repo, wt, done.head, step.source) or done.paths
        state.ready = True
        st.write(repo, path, state)
    result.conflict = conflict(series, repo, result, state)


def stop_state(series: Series, repo: Repo, result: TargetResult, target: ResolvedTarget,
               branch: tuple[str, str | None], refresh: bool, done: Replayed
               ) -> st.RebaseState:
    """The state `stop` saves first, before any worktree holds the stop."""
    wt = st.worktree_path(repo, series.name, target.slug)
    return st.RebaseState(
        series.name, str(series.root), st.StateTarget.of(target), *branch,
        series.manifest.version if refresh else None, st.Phase.CONFLICT, done.head,
        done.stop or 0, str(wt), list(done.paths), list(result.patches), ready=False,
        trial=list(done.trial), auto_resolve=done.auto)


def conflict(series: Series, repo: Repo, result: TargetResult, state: st.RebaseState
             ) -> Conflict:
    """What the result says of the stop `state` saved: its patch, paths, worktree (once it
    holds the stop) and hints."""
    from carry.rebase.hints import hints

    step = state.stop
    return Conflict(step.file, step.subject, step.author, state.paths,
                    state.worktree if state.ready else "",
                    hints(repo, series.manifest.base.commit, state.target.sha, step.file,
                          step.subject, state.paths, series.manifest.upstream.repo,
                          [p.subject for p in result.patches]))


def checkout(repo: Repo, wt: Path, head: str, source: str) -> list[str]:
    """`wt` at `head` with the stopping patch `source` cherry-picked into it, its conflicts
    left for a human; returns the conflicted paths. A kept worktree is updated in place; one
    that cannot be (not ours, a lock a kill left, a file in the cherry-pick's way) is made
    again from nothing. Whatever carry did not make is refused (`claim`), never replaced."""
    claim(repo, wt)
    if repo.made_by_carry(wt):
        with contextlib.suppress(GitError):
            work = repo.worktree_reset(wt, head)
            if work is not None:
                try:
                    return work.cherry_pick_no_commit(source)
                finally:
                    work.close()
    if wt.exists() and any(wt.iterdir()):  # ours (claimed); an emptied one is reused in place
        remove(repo, wt, tidy=False)  # (`add` forgets a registration whose folder is gone)
    wt.parent.mkdir(parents=True, exist_ok=True)
    work = repo.worktree_add(wt, head)
    try:
        return work.cherry_pick_no_commit(source)
    finally:
        work.close()


def taken(repo: Repo, wt: Path) -> str:
    """What holds `wt` that carry did not make ("" when it is free: nothing there, an empty
    folder, or carry's own worktree)."""
    if wt.is_symlink():
        return "a symbolic link"
    if not wt.exists() or repo.made_by_carry(wt):
        return ""
    if not wt.is_dir():
        return "a file"
    try:
        if not any(wt.iterdir()):
            return ""
    except OSError:
        return "a folder carry cannot read"
    if repo.owns_worktree(wt):
        return "a worktree of this repository that carry did not make"
    return "a git checkout" if (wt / ".git").exists() else "a folder carry did not make"


def claim(repo: Repo, wt: Path) -> None:
    """Refuse, changing nothing, when `wt` holds something carry did not make: carry removes
    or resets only its own worktrees."""
    what = taken(repo, wt)
    if what:
        raise CarryError(f"{wt} is {what}; carry puts its worktree there and will not touch "
                         "what it did not make",
                         hint="move it away (or remove it yourself), then run the command again")


def keep_untracked(repo: Repo, wt: Path) -> None:
    """Refuse to go on from a worktree that is not carry's own (what is there now is
    somebody's), or that holds files git does not track: taking the resolution (or the
    edit) leaves them out, and the worktree goes at the finish."""
    if not repo.made_by_carry(wt):
        raise CarryError(f"the worktree {wt} is gone, or is not the one carry made",
                         hint="carry rebase --abort (it leaves what is there as it is)")
    work = Repo(wt.resolve())
    try:
        loose = work.untracked()
    finally:
        work.close()
    if loose:
        shown = ", ".join(loose[:10]) + (f" and {len(loose) - 10} more" if len(loose) > 10
                                         else "")
        raise CarryError(f"untracked files in {wt} would be lost: {shown}",
                         hint="git add them there to keep them in the patch, or move them "
                              "away; then carry rebase --continue")


def remove(repo: Repo, wt: Path, tidy: bool = True) -> None:
    """`tidy` also removes the emptied NAME/ and REPO.carry/ folders; a stop must not, since
    other targets of the same run are making their worktrees there at the same time.

    Run from inside the worktree (`--continue` typed where the conflict was resolved), its
    folder is emptied but kept: a process cannot move its parent shell, and a shell whose
    directory is deleted fails every command there (`git status`: "Unable to read current
    working directory"); an empty folder outside any repository fails nothing, and the note
    says where to `cd`. The next `checkout` there makes the worktree again in its place.

    Something carry did not make at `wt` (`taken`) is left as it is, with a note."""
    what = taken(repo, wt)
    if what:
        from carry.base import notes

        notes.warn(f"left {wt} as it is: it is {what}")
        return
    here = _shell_in(wt) if tidy and repo.made_by_carry(wt) else None
    if here is not None:
        _empty(wt.resolve(), here)
        repo.forget_half_made(wt)  # its `.git` is gone, and carry's lock keeps it from prune
        repo.worktree_prune()
        from carry.base import notes

        notes.warn(f"removed the conflict worktree {wt}, where this shell is; its folder is "
                   f"kept, empty, so the shell is not left in a deleted one: cd {repo.path}")
        return
    repo.worktree_remove(wt)  # also when its folder is gone: a registration may be left
    for empty in (wt.parent, wt.parent.parent) if tidy else ():
        with contextlib.suppress(OSError):
            empty.rmdir()


def _shell_in(wt: Path) -> Path | None:
    """The current directory, when it is `wt` or inside it."""
    try:
        here = Path.cwd().resolve()
        return here if wt.exists() and here.is_relative_to(wt.resolve()) else None
    except OSError:  # already deleted
        return None


def _empty(folder: Path, keep: Path) -> None:
    """Remove everything in `folder` but the folders on the way to `keep` (links are not
    followed)."""
    import shutil

    for entry in folder.iterdir():
        if not entry.is_symlink() and entry.is_dir():
            if keep.is_relative_to(entry):
                _empty(entry, keep)
            else:
                shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
