"""`carry rebase --furthest`: each target pinned to the furthest commit of its first-parent
line onto which the series replays with no stop (`replay.furthest`), before the rebase runs
as it does for `--onto SHA`: same branch, state, atomicity and resume. A target whose first
commit past the base already blocks moves nothing: its result says so and fails, as a
conflict does, with no branch written and no state left."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from carry.git import Ident, Repo
from carry.replay import furthest
from carry.replay.engine import TargetResult, TargetStatus
from carry.replay.targets import ResolvedTarget

if TYPE_CHECKING:
    from carry.replay.chain import Carried
    from carry.series.store import Series


def pin(series: Series, repo: Repo, base: str, carried: Sequence[Carried],
        targets: Sequence[ResolvedTarget], committer: Ident, auto: bool = True
        ) -> tuple[list[ResolvedTarget], list[TargetResult], dict[str, furthest.Furthest]]:
    """The targets that move, each on its furthest commit under its own name (so the branch
    is still carry/NAME/TARGET); the results of those that do not; what was found, by slug."""
    moving: list[ResolvedTarget] = []
    still: list[TargetResult] = []
    found: dict[str, furthest.Furthest] = {}
    for t in targets:
        f = furthest.find(series, repo, base, carried, t, committer, auto)
        found[t.slug] = f
        if f.reach is furthest.Reach.NONE:
            still.append(nothing_moves(series.name, t, f))
        else:
            moving.append(ResolvedTarget(t.name, t.ref, f.onto.sha))
    return moving, still, found


def nothing_moves(series: str, t: ResolvedTarget, f: furthest.Furthest) -> TargetResult:
    b = f.blocker
    why = (f"{b.commit.sha[:12]} \"{b.commit.subject}\" blocks {b.patch}"
           + (f" in {', '.join(b.paths)}" if b.paths else "")) if b else ""
    return TargetResult(series, t.name, t.ref, f.onto.sha, TargetStatus.FAILED, "", [],
                        message=f"nothing moves: the first commit of {t.ref} past the "
                                f"series base already stops it; {why}", furthest=f)
