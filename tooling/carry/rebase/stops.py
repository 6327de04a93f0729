"""Three things to do at a stop besides going on:

- `--resolve`: the conflict checked out in its worktree (`../REPO.carry/NAME/TARGET`), with
  git's markers, for a human to resolve; then `--continue` takes it. A stop itself makes no
  worktree (on a tree of thousands of files a checkout costs seconds, and CI, `--json` and a
  loop that skips every stop need none), so the step that makes one has its own name rather
  than hiding in `--continue`. Once made, it follows the rebase from stop to stop.

- `--show-current-patch`: the stopped patch, its message and diff as `git show` prints them
  (git shows REBASE_HEAD, the commit being picked; carry's is the patch as a commit on the
  series base). Read-only.
- `--quit`: stop being in a rebase and keep what is done, as `git rebase --quit` does: the
  state goes and so does the conflict worktree, but nothing is put back. A branch that a
  finishing rebase already moved stays moved, a series version it wrote stays, and the
  patches replayed so far stay reachable from the head carry reports (`git branch NAME
  HEAD` keeps them), where `--abort` would undo.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from carry.base.errors import CarryError
from carry.git import Repo
from carry.rebase import state as st
from carry.rebase.checkout import remove as remove_worktree
from carry.replay.engine import Conflict, Replayed, TargetResult, TargetStatus
from carry.series.store import Series


@dataclass
class CurrentPatch:
    series: str
    target: str
    patch: str  # the patch file
    commit: str  # the patch as a commit on the series base
    phase: str  # conflict | edit
    show: str  # `git show` of it


@dataclass
class Quit:
    series: str
    target: str
    branch: str
    branch_at: str  # where the branch is, untouched ("" for none)
    head: str  # the patches replayed so far
    worktree: str  # removed


def current_patch(series: Series, repo: Repo, which: Sequence[str]) -> CurrentPatch:
    state = st.only(repo, series.name, which, "--show-current-patch")
    target = state.target.name
    if not state.phase.stopped:
        raise CarryError(f"the rebase of {series.name} onto {target} is not stopped at a "
                         f"patch (it is {state.phase})", hint="carry rebase --continue")
    step = state.stop
    shown = repo.show_commit(step.source).decode("utf-8", "replace")
    return CurrentPatch(series.name, target, step.file, step.source, state.phase, shown)


def quit_(series: Series, repo: Repo, which: Sequence[str]) -> list[Quit]:
    out = []
    for state in st.pick(repo, series.name, which):
        wt = Path(state.worktree) if state.worktree else None
        if wt is not None:
            remove_worktree(repo, wt)
        ref = state.branch
        at = repo.try_rev_parse(ref) if repo.ref_exists(ref) else None
        st.remove(repo, st.state_path(repo, series.name, state.target.slug))
        out.append(Quit(series.name, state.target.name, ref, at or "", state.head,
                        str(wt) if wt else ""))
    return out


def resolve(series: Series, repo: Repo, which: Sequence[str]) -> list[TargetResult]:
    """The stop's conflict in its worktree: made (or a kept one moved here) when it does not
    hold this stop yet, and left as it is when it does, so that a second `--resolve` never
    resets a resolution under way."""
    from carry.rebase.checkout import stop

    state = st.only(repo, series.name, which, "--resolve")
    t = state.target
    if state.phase is not st.Phase.CONFLICT:
        raise CarryError(f"the rebase of {series.name} onto {t.name} is not stopped at a "
                         f"conflict (it is {state.phase})", hint="carry rebase --continue")
    result = TargetResult(series.name, t.name, t.ref, t.sha, TargetStatus.CONFLICT, "",
                          state.patches, branch=state.branch)
    if state.ready:
        s = state.stop
        result.conflict = Conflict(s.file, s.subject, s.author, state.paths, state.worktree)
        return [result]
    stop(series, repo, result, t, (state.branch, state.branch_old),
         state.refresh_from is not None,
         Replayed(result, state.position, state.paths, state.head, state.trial,
                  state.auto_resolve), make=True)
    return [result]
