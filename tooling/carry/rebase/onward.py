"""`--continue` and `--skip`: a stopped rebase taken on from its saved state. At a conflict
the stop's patch is dealt with (left out, the worktree's resolution, or one recorded since on
another target); the forecast's trial then gives the steps up to the next stop when it fits,
merging nothing, else the rest is replayed; the end is the finishing transaction
(`command.finish`). A state found finishing (a kill came during the transaction) is finished
again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from carry.base.errors import CarryError
from carry.git import Repo
from carry.rebase import checkout
from carry.rebase import state as st
from carry.rebase import trial as trialmod
from carry.rebase.checkout import keep_untracked, stop
from carry.rebase.checkout import remove as remove_worktree
from carry.rebase.flags import Action
from carry.replay import targets as targetmod
from carry.replay.engine import (
    PatchStatus,
    Refreshed,
    Replayed,
    TargetResult,
    TargetStatus,
    audited,
    forecast,
    resolutions,
    run_steps,
)
from carry.series.store import Series


def resume(series: Series, repo: Repo, action: Action, which: Sequence[str] = (),
           force: bool = False) -> list[TargetResult]:
    """`--continue` or `--skip` on the stopped target(s). A skip (or a resolution that adds
    nothing) takes the forecast's trial up to the next stop, merging nothing; a resolution
    replays the rest. `--continue` at a stop with no worktree yet takes a resolution recorded
    since on another target, or else is refused: `--resolve` makes the worktree."""
    states = st.pick(repo, series.name, which)
    if len(states) > 1:
        names = ", ".join(s.target.name for s in states)
        raise CarryError(f"several rebases of {series.name} are in progress ({names})",
                         hint="name one with --target or --onto")
    state = states[0]
    t = state.target
    result = result_of(series, state)
    if action is Action.SKIP and state.phase is not st.Phase.CONFLICT:
        raise CarryError(f"the rebase onto {t.name} is not stopped at a conflict; nothing to "
                         "skip", hint="carry rebase --continue")
    if state.phase is st.Phase.CONFLICT and _past_stop(series, repo, state, result,
                                                       action is Action.SKIP, force):
        return [result]
    if state.phase is st.Phase.REPLAYING:
        _replay_rest(series, repo, state, result)
    else:
        _finish_again(series, repo, state, result)
    return [result]


def result_of(series: Series, state: st.RebaseState) -> TargetResult:
    """The result a resume of `state` reports, before it deals with the stop."""
    t = state.target
    return TargetResult(series.name, t.name, t.ref, t.sha, TargetStatus.CONFLICT, "",
                        state.patches, branch=state.branch,
                        line=targetmod.fork_line(series, t.name, t.ref))


def skip_to_next(series: Series, repo: Repo, state: st.RebaseState, result: TargetResult
                 ) -> st.RebaseState | None:
    """What `--skip` at `state`'s stop comes to when the trial takes it to the next stop and
    no worktree is there: that stop's state, with `result` as the skip leaves it, nothing
    written (`skipmemo` keeps it for a later skip). None when the skip replays or ends."""
    _, taken = _taken(series, repo, state, result, True, False)
    if taken is None or taken.stop is None:
        return None
    new = checkout.stop_state(series, repo, result, state.target,
                              (state.branch, state.branch_old),
                              state.refresh_from is not None, _replayed(state, result, taken))
    result.conflict = checkout.conflict(series, repo, result, new)
    return new


def _taken(series: Series, repo: Repo, state: st.RebaseState, result: TargetResult,
           skip: bool, force: bool) -> tuple[str, trialmod.Taken | None]:
    """The head once the stop is dealt with, and what the trial gives the steps after it."""
    head = _dealt_with(series, repo, state, result, skip, force)
    return head, trialmod.take(repo, state.patches, state.trial, state.position, head,
                               state.target.sha) if state.trial else None


def _replayed(state: st.RebaseState, result: TargetResult, taken: trialmod.Taken) -> Replayed:
    return Replayed(result, taken.stop, taken.paths, taken.head, state.trial,
                    state.auto_resolve)


def _past_stop(series: Series, repo: Repo, state: st.RebaseState, result: TargetResult,
               skip: bool, force: bool) -> bool:
    """Deal with the stop, then take the trial up to the next stop when it fits: True when
    the rebase now waits at that stop; else the state says `replaying` from the new head."""
    steps, pos, t = state.patches, state.position, state.target
    head, taken = _taken(series, repo, state, result, skip, force)
    if taken is not None and taken.stop is not None:
        stop(series, repo, result, t, (state.branch, state.branch_old),
             state.refresh_from is not None, _replayed(state, result, taken))
        return True
    for later in steps[pos + 1:] if taken is None else ():
        if later.status == PatchStatus.WOULD_CONFLICT:  # a forecast: replayed for real now
            later.status, later.forecast = PatchStatus.PENDING, []
            later.cause, later.builds_on = None, ""
    state.phase, state.head = st.Phase.REPLAYING, head if taken is None else taken.head
    state.ready, state.trial = False, []  # the worktree stays, for the next stop
    st.write(repo, st.state_path(repo, series.name, t.slug), state)
    return False


def _dealt_with(series: Series, repo: Repo, state: st.RebaseState, result: TargetResult,
                skip: bool, force: bool) -> str:
    """The head once the stop's patch is left out (`--skip`), or resolved: in the worktree
    (then recorded in the series), or by a resolution recorded since on another target."""
    step, head, t = state.stop, state.head, state.target
    if skip:
        step.status, step.reason = PatchStatus.SKIPPED, "left out with --skip"
        return head
    from carry.replay.resolution import record, take_recorded, take_resolution  # not a skip's

    if not state.ready:  # no worktree holds this stop yet
        recorded = take_recorded(series, repo, step, head, repo.committer_ident(),
                                 state.auto_resolve)
        if recorded is None:
            raise CarryError(f"{step.file} is not resolved yet: no worktree holds the "
                             f"conflict on {t.name}",
                             hint="carry rebase --resolve checks it out to resolve in "
                                  "(or --skip, --abort)")
        return recorded
    committer, wt = repo.committer_ident(), Path(state.worktree)
    keep_untracked(repo, wt)
    try:
        resolved = take_resolution(repo, wt, step, head, state.paths, committer, force)
    except CarryError:  # markers left: resolved since on another target, recorded?
        resolved = take_recorded(series, repo, step, head, committer,
                                 state.auto_resolve) or ""
        if not resolved:
            raise
    else:
        result.recorded = record(series, repo, step, head, resolved, f"{t.name} {t.sha[:12]}")
    return resolved


def _replay_rest(series: Series, repo: Repo, state: st.RebaseState,
                 result: TargetResult) -> None:
    """Replay what is pending from the state's head: a conflict is the next stop; else the
    worktree goes and the finishing state replaces this one in place (a kill in between
    keeps the work)."""
    steps, head, t = state.patches, state.head, state.target
    branch, refresh = (state.branch, state.branch_old), state.refresh_from is not None
    if any(s.status == PatchStatus.PENDING for s in steps):  # none after a skip took a trial
        committer = repo.committer_ident()
        recorded = resolutions(series, state.auto_resolve)  # as the rebase began
        head, at, paths = run_steps(repo, steps, head, committer, recorded=recorded)
        if at is not None:
            trial = forecast(repo, steps, at, head, committer, recorded, onto=t.sha,
                             paths=paths)
            stop(series, repo, result, t, branch, refresh,
                 Replayed(result, at, paths, head, trial, state.auto_resolve))
            return
    if state.worktree:
        remove_worktree(repo, Path(state.worktree))
    result.status, result.head = TargetStatus.APPLIED, head
    result.audit = audited(repo, result)
    from carry.rebase.command import finish  # the end only: a skip to a stop needs none

    finish(series, repo, [(t, result)], {t.slug: branch}, refresh)


def _finish_again(series: Series, repo: Repo, state: st.RebaseState,
                  result: TargetResult) -> None:
    """A kill came after the finishing state was written: the branch may have moved, and the
    new version may have been written; what is not done yet is done now."""
    from carry.rebase.command import refresh_series

    t, ref = state.target, state.branch
    result.status, result.head = TargetStatus.APPLIED, state.head
    now = repo.try_rev_parse(ref) if repo.ref_exists(ref) else None
    if now != state.head:
        repo.set_ref(ref, state.head, state.branch_old,
                     targetmod.reflog_message(series.name, [t]))
    result.updated = True
    since = state.refresh_from
    if since is not None and series.manifest.version == since:
        result.refreshed = refresh_series(series, repo, result, t)
    elif since is not None and series.manifest.version == since + 1:
        result.refreshed = _tag_written(series)
    st.remove(repo, st.state_path(repo, series.name, t.slug))


def _tag_written(series: Series) -> Refreshed:
    """The version a refresh wrote, and an interrupt (Ctrl-C, a kill) stopped before its
    tag: tagged now."""
    from carry.series import versions

    try:
        kept = versions.tag(series) or ""
    except CarryError:  # a tag of that number holds other content: left as it is
        kept = ""
    return Refreshed(series.manifest.version, kept, sorted(p.name for p in series.patches()))
