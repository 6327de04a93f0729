"""Doing what `carry rebase` is asked (`flags.Action`): start, or one of git's ways to go on
from a stop (`--continue`, `--skip`, `--abort`, `--quit`, `--show-current-patch`), each on
the stopped rebase(s) the caller found (`resume.locate`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from carry.base.errors import CarryError
from carry.rebase.flags import Action as Action

if TYPE_CHECKING:
    from carry.git import Repo
    from carry.rebase.flags import Aborted, Options
    from carry.rebase.stops import CurrentPatch, Quit
    from carry.replay.engine import TargetResult
    from carry.series.store import Series

    Outcome = Sequence[TargetResult] | Sequence[Aborted] | Sequence[Quit] | Sequence[CurrentPatch]


def run(series: Series, repo: Repo, opts: Options, action: Action,
        which: Sequence[str] = ()) -> Outcome:
    """A new rebase, or `action` on the stopped one(s) `which` names (target names or refs;
    none: the series' only one)."""
    from carry.base import atomic

    if not action.resumes:
        from carry.rebase import command

        return command.run(series, repo, opts)
    extra = [n for n, on in (("--branch", opts.branch), ("--refresh", opts.refresh),
                             ("--fetch", opts.fetch), ("--dry-run", opts.dry_run),
                             ("--furthest", opts.furthest),
                             ("--force", opts.force and action is not Action.CONTINUE))
             if on]
    if extra:
        raise CarryError(f"{action.value} resumes the saved rebase; {', '.join(extra)} cannot "
                         "change it now")
    if action in (Action.SHOW, Action.QUIT, Action.RESOLVE, Action.ABORT):
        return _stopped(series, repo, action, which)
    from carry.rebase import onward  # only what goes on: a skip imports no more

    with atomic.own_files_only():  # a conflict worktree's files need not reach the disk
        if action is Action.CONTINUE:
            from carry.rebase import edit

            if edit.at_edit(series, repo, which):
                return edit.resume(series, repo, which)
        return onward.resume(series, repo, action, which, force=opts.force)


def _stopped(series: Series, repo: Repo, action: Action, which: Sequence[str]) -> Outcome:
    """`--show-current-patch`, `--quit`, `--resolve` and `--abort`: what stays at the stop
    or leaves the rebase."""
    from carry.base import atomic
    from carry.rebase import command, stops

    if action is Action.SHOW:
        return [stops.current_patch(series, repo, which)]
    with atomic.own_files_only():  # a conflict worktree's files need not reach the disk
        if action is Action.ABORT:
            return command.abort(series, repo, which)
        if action is Action.QUIT:
            return stops.quit_(series, repo, which)
        return stops.resolve(series, repo, which)


def exit_code(results: Outcome) -> int:
    """0 unless a target stopped or failed."""
    from carry.replay.engine import TargetStatus

    return 0 if all(getattr(r, "status", TargetStatus.APPLIED) == TargetStatus.APPLIED
                    for r in results) else 1
