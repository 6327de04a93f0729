"""Views of what one does at a stop: `carry edit`'s stop, `--show-current-patch` and `--quit`
(`reports.show_rebase` shows the replays themselves)."""

from __future__ import annotations

import sys
from typing import Any

from carry.cli import render
from carry.cli.views import _short


def show_stop(results: list[Any], as_json: bool) -> None:
    """`--show-current-patch` prints the patch as `git show` does, and nothing else, so that
    it can be piped as git's can; `--quit` says what stays where."""
    if as_json:
        return render.emit_json(results)
    from carry.rebase.stops import CurrentPatch

    for r in results:
        if isinstance(r, CurrentPatch):
            sys.stdout.write(r.show)
            continue
        short = r.branch.removeprefix("refs/heads/")
        stays = f"{short} stays at {_short(r.branch_at)}" if r.branch_at else \
            f"{short} is not written"
        render.say(f"{r.series}: quit the rebase onto {r.target}; {stays}")
        render.say(f"  the patches replayed so far are at {_short(r.head)}; to keep them:")
        render.say(f"    git branch NAME {r.head}")
        if r.worktree:
            render.say(f"  removed the worktree {r.worktree}")
    return None


def show_edit(stop: Any, as_json: bool, resume: str) -> None:
    """Where to amend, how, and the command that takes the amended patch."""
    if as_json:
        return render.emit_json({**vars(stop), "next": resume})
    render.say(render.fit(f"{stop.series}: stopped on {stop.target} to edit {stop.patch[:4]}"))
    render.say(f"  {stop.patch}")
    by = f"\" by {stop.author}"
    render.say(render.fit(f"  \"{stop.subject}", render.width() - len(by)) + by)
    render.say(f"  worktree (at {_short(stop.commit)}): {stop.worktree}")
    for line in render.wrap("amend it there: edit its files, `git commit --amend` for its "
                            "message or a trailer; it keeps its author, author date and number"):
        render.say(line)
    branch = stop.branch.removeprefix("refs/heads/")
    render.say(f"  then: {resume}")
    for line in render.wrap(f"(or --abort): the later patches are replayed on it, and the "
                            f"series is written as its next version and to {branch}"):
        render.say(line)
    return None
