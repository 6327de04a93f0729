"""The conflict worktree of a stopped rebase (`../REPO.carry/NAME/TARGET`): one per series and
target, made only when a maintainer is to resolve in it, kept from one stop to the next and
moved there in place (git writes only the files that differ, as `git cherry-pick --skip`
does in its one worktree), and removed by `--abort` and by the finish."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from carry.git import GitError, Repo
from carry.rebase import state as st
from carry.replay.engine import Conflict, PatchResult, Replayed, TargetResult
from carry.replay.targets import ResolvedTarget
from carry.series.store import Series


def stop(series: Series, repo: Repo, result: TargetResult, target: ResolvedTarget,
         branch: tuple[str, str | None], refresh: bool, done: Replayed,
         make: bool = True, later: Callable[[], list[PatchResult]] | None = None) -> None:
    """Save the state first, then put the stop in the conflict worktree it names: the one
    kept from the last stop is moved here in place, and one is made only when `make` (a
    maintainer at a terminal, not a --json caller). The state says `ready` only once the
    worktree holds this stop, so a kill in between leaves a state whose `--continue` takes
    nothing from a half-moved worktree (it moves it again) and whose `--abort` removes it.
    `later` is the forecast still to run: it runs while git writes a new worktree."""
    step = result.patches[done.stop or 0]
    wt = st.worktree_path(repo, series.name, target.slug)
    state = st.new(series.name, series.root, result, target, branch[0], branch[1],
                   series.manifest.version if refresh else 0, "conflict", done.head,
                   done.stop or 0, str(wt), done.paths, trial=done.trial)
    path = st.state_path(repo, series.name, target.slug)
    st.write(path, state)

    def foresee() -> None:
        if later is not None:
            done.trial = later()
            state.update(patches=[asdict(p) for p in result.patches],
                         trial=[asdict(p) for p in done.trial])
    if make or wt.exists():
        state["paths"] = checkout(repo, wt, done.head, step.source, foresee) or done.paths
        state["ready"] = True
    else:
        foresee()
    if state["ready"] or later is not None:
        st.write(path, state)
    from carry.rebase.hints import hints

    result.conflict = Conflict(step.file, step.subject, step.author, state["paths"],
                               str(wt) if state["ready"] else "",
                               hints(repo, series.manifest.base.commit, target.sha, step.file,
                                     step.subject, state["paths"], series.manifest.upstream.repo))


def checkout(repo: Repo, wt: Path, head: str, source: str,
             meanwhile: Callable[[], None] = lambda: None) -> list[str]:
    """`wt` at `head` with the stopping patch `source` cherry-picked into it, its conflicts
    left for a human; returns the conflicted paths. A kept worktree is updated in place; one
    that cannot be (not ours, a lock a kill left, a file in the cherry-pick's way) is made
    again from nothing. `meanwhile` runs while git writes a new worktree's files."""
    moved = None
    if wt.exists():
        with contextlib.suppress(GitError):
            moved = repo.worktree_reset(wt, head)
    if moved is not None:
        meanwhile()  # moving in place is quick: nothing to overlap
        meanwhile = _done
        try:
            with contextlib.suppress(GitError):  # a file in the way: made again below
                return moved.cherry_pick_no_commit(source)
        finally:
            moved.close()
    remove(repo, wt, tidy=False)
    wt.parent.mkdir(parents=True, exist_ok=True)
    work, written = repo.worktree_start(wt, head)
    try:
        meanwhile()
    finally:
        written()
    try:
        return work.cherry_pick_no_commit(source)
    finally:
        work.close()


def _done() -> None:
    """What is left to do meanwhile once it ran."""


def remove(repo: Repo, wt: Path, tidy: bool = True) -> None:
    """`tidy` also removes the emptied NAME/ and REPO.carry/ folders; a stop must not, since
    other targets of the same run are making their worktrees there at the same time."""
    if wt.exists():
        repo.worktree_remove(wt)
    shutil.rmtree(wt, ignore_errors=True)
    repo.worktree_prune()
    for empty in (wt.parent, wt.parent.parent) if tidy else ():
        with contextlib.suppress(OSError):
            empty.rmdir()
