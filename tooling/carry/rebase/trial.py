"""`--skip` without a merge. The forecast at a stop is the rest of the series replayed with
the stopping patch left out (and each further conflict after it), which is exactly what
`--skip` does; the rebase keeps that trial in its state, and a skip takes the trial's commits
up to the next would-conflict, whose stop and forecast are the rest of the same trial. Only
a resolution that changes the head needs a fresh replay."""

from __future__ import annotations

from dataclasses import dataclass, replace

from carry.base.errors import CarryError
from carry.git import Repo
from carry.replay.engine import PatchResult, PatchStatus


@dataclass
class Taken:
    """What the trial gave the steps: the new head, and the next stop (its index and the
    paths the forecast saw conflict) or None at the end of the series."""

    head: str
    stop: int | None
    paths: list[str]


def head_at(trial: list[PatchResult], pos: int, onto: str) -> str:
    """The commit the trial had replayed up to when it reached patch `pos`."""
    return next((s.commit for s in reversed(trial[:pos]) if s.commit), onto)


def take(repo: Repo, steps: list[PatchResult], trial: list[PatchResult], pos: int, head: str,
         onto: str) -> Taken | None:
    """Give the steps after `pos`, up to the next would-conflict, the trial's results; what
    they come to, or None, with the steps untouched, when the trial does not fit: another
    head under it (a resolution), another series, or commits that do not chain onto `head`.
    Then the caller replays for real."""
    if len(trial) != len(steps) or head_at(trial, pos, onto) != head or any(
            (t.number, t.file, t.source) != (s.number, s.file, s.source)
            for s, t in zip(steps, trial, strict=True)):
        return None
    try:  # unreferenced commits: a `git gc --prune` while the rebase waited may take them
        repo.read_commits([t.commit for t in trial[pos + 1:] if t.commit])  # one exchange
    except CarryError:
        return None
    taken: dict[int, PatchResult] = {}
    stop = None
    for i in range(pos + 1, len(steps)):
        if steps[i].status == PatchStatus.WOULD_CONFLICT:
            stop = i
            break
        if steps[i].status != PatchStatus.PENDING:
            continue
        t = trial[i]
        if t.status == PatchStatus.APPLIED and t.commit:
            if repo.read_commit(t.commit).parents != (head,):
                return None
            head = t.commit
        elif t.status != PatchStatus.DROPPED or t.commit:
            return None
        taken[i] = replace(t)
    for i, t in taken.items():
        steps[i] = t
    if stop is None:
        return Taken(head, None, [])
    paths = steps[stop].forecast
    steps[stop].status, steps[stop].forecast = PatchStatus.CONFLICT, []
    return Taken(head, stop, paths)
