"""`--furthest`: the newest commit of a target's first-parent line onto which the series
replays with no stop (recorded resolutions and drops count, as in a rebase), the upstream
commit that blocks the next step, and the patch it blocks.

It is a bisection over the first-parent line base..target, each probe one replay in memory
(drop detection and `run_steps`, no forecast, no ref, no state), so it costs about
log2(n) + 1 replays, not n. It assumes that once a commit blocks the series every later one
does too (a conflict is not undone by later upstream commits). That is not always true (an
upstream revert can unblock), so the answer is "a point the series replays onto, with the
next commit blocking", not always the newest such point; bench/bench_furthest.py checks it
against a replay at every commit of the real fork's line.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from carry.base.errors import CarryError
from carry.git import Ident, Repo
from carry.replay import rerere
from carry.replay.runs import PatchResult, PatchStatus, run_steps
from carry.replay.targets import ResolvedTarget
from carry.replay.why import pr_number

if TYPE_CHECKING:
    from carry.replay.chain import Carried
    from carry.series.store import Series


class Reach(enum.StrEnum):
    TIP = "tip"  # the series replays onto the target itself
    PARTIAL = "partial"  # onto an older commit of its line; the next one blocks
    NONE = "none"  # the first commit past the base already blocks: nothing moves


@dataclass(frozen=True)
class Point:
    """A commit of the target's line: its sha, subject and `(#N)` PR number (0: none)."""

    sha: str
    subject: str
    pr: int = 0

    def name(self) -> str:
        return f"#{self.pr}" if self.pr else self.sha[:12]


@dataclass(frozen=True)
class Blocker:
    """The upstream commit the series stops on, and the patch it stops."""

    commit: Point
    patch: str
    paths: list[str] = field(default_factory=list)


@dataclass
class Furthest:
    """Where `--furthest` got: `onto` the commit the series goes on (the last commit before
    the line when nothing moves), `steps` of the line's `total` first-parent commits taken."""

    target: str
    ref: str
    reach: Reach
    onto: Point
    steps: int
    total: int
    blocker: Blocker | None = None
    probes: int = 0  # replays it cost

    @property
    def line(self) -> str:
        """"up to #43100 (120 of 212 commits); blocked by #43101 on 0002"."""
        if self.reach is Reach.TIP:
            return f"up to {self.onto.name()}, the tip ({self.steps} of {self.total} commits)"
        b = self.blocker
        blocked = f"blocked by {b.commit.name()} on {b.patch[:4]}" if b else "blocked"
        if self.reach is Reach.NONE:
            return f"nothing moves (0 of {self.total} commits); {blocked}"
        return f"up to {self.onto.name()} ({self.steps} of {self.total} commits); {blocked}"


Probe = Callable[[str], tuple[str, list[str]] | None]


def bisect(line: Sequence[str], probe: Probe) -> tuple[int, tuple[str, list[str]] | None, int]:
    """The last index of `line` whose probe passes (-1: none), what the probe of the next one
    said (the patch file and paths), and how many probes it took. The tip is tried first: most
    targets do not conflict, and then one probe is all it costs."""
    if not line:
        return -1, None, 0
    stop = probe(line[-1])
    if stop is None:
        return len(line) - 1, None, 1
    lo, hi, count = -1, len(line) - 1, 1  # probe(lo) passes (the base), probe(hi) stops
    while hi - lo > 1:
        mid = (lo + hi) // 2
        said = probe(line[mid])
        count += 1
        if said is None:
            lo = mid
        else:
            hi, stop = mid, said
    return lo, stop, count


def prober(series: Series, repo: Repo, base: str, carried: Sequence[Carried],
           committer: Ident, auto: bool = True) -> Probe:
    """One replay in memory onto a commit: what stops it (patch file, paths) or None. Drops
    are found for that commit (a patch upstream took later is not yet a drop), recorded
    resolutions resolve as they do in a rebase, and so do the conflicts whose three texts
    decide them (unless `auto` or the manifest's `policy.auto_resolve` is off); no forecast,
    audit or why."""
    from carry.replay.drops import find_drops

    recorded = rerere.load(series.root, auto and series.manifest.policy.auto_resolve)
    m = series.manifest

    def probe(sha: str) -> tuple[str, list[str]] | None:
        drops = find_drops(repo, carried, base, sha, m.provenance, m.upstream.repo,
                           remember=False)
        steps = [PatchResult(c.number, c.file, c.patch.subject, c.patch.author.name,
                             source=c.commit.sha) for c in carried]  # as engine.steps_for
        for step in steps:
            if step.number in drops:
                step.status, step.reason = PatchStatus.DROPPED, drops[step.number].reason
        _, stop, paths = run_steps(repo, steps, sha, committer, recorded=recorded)
        return None if stop is None else (steps[stop].file, paths)

    return probe


def find(series: Series, repo: Repo, base: str, carried: Sequence[Carried],
         target: ResolvedTarget, committer: Ident, auto: bool = True) -> Furthest:
    """The furthest point of `target`'s first-parent line (see the module docstring)."""
    line = repo.first_parent_chain(target.sha, base)
    if line is None:
        raise CarryError(f"cannot list the first-parent line {base[:12]}..{target.ref}")
    _through_base(repo, line, base, target)
    at, stop, probes = bisect(line, prober(series, repo, base, carried, committer, auto))
    reach = Reach.TIP if at == len(line) - 1 else Reach.PARTIAL if at >= 0 else Reach.NONE
    onto_sha = line[at] if at >= 0 else base
    blocker = None
    if stop is not None:
        blocker = Blocker(_point(repo, line[at + 1]), stop[0], stop[1])
    return Furthest(target.name, target.ref, reach, _point(repo, onto_sha), at + 1, len(line),
                    blocker, probes)


def _through_base(repo: Repo, line: Sequence[str], base: str, target: ResolvedTarget) -> None:
    """Refuse a line that does not start at the base: REF behind it, unrelated, past it only
    through a merge, or cut short by a shallow clone. No point of such a line is the base
    plus upstream commits, and the bisection's start would not be known to pass."""
    start = repo.read_commit(line[0]).parents[:1] if line else (target.sha,)
    if start == (base,):
        return
    cut = bool(line) and line[0] in repo.shallow_boundary()
    why = " (the clone is shallow: its history is cut short)" if cut \
        else " (it ends at a root: unrelated history)" if not start else ""
    raise CarryError(f"--furthest: the first-parent line of {target.ref} does not pass "
                     f"through the series base {base[:12]}{why}",
                     hint=("git fetch --unshallow, or " if cut else "")
                     + f"rebase onto {target.ref} without --furthest")


def _point(repo: Repo, sha: str) -> Point:
    subject = repo.read_commit(sha).subject
    return Point(sha, subject, pr_number(subject) or 0)
