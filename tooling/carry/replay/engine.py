"""Replay a chain onto a target: the worktree-free merge-tree recipe (commit the target's tree on
the patch's parent, merge that with the patch, commit the result onto the target) with the
graft and result commits written in-process, so a patch costs at most one `git merge-tree`, and
a run of patches on disjoint paths costs one for the whole run.

The engine writes no ref, state or worktree: `rebase` decides what a result means for the
user's branches, `validate` only needs the rebased tree.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from carry.base.data import EMPTY_WHEN_NONE
from carry.git import Ident, Repo
from carry.replay.runs import PatchResult as PatchResult
from carry.replay.runs import PatchStatus as PatchStatus
from carry.replay.runs import run_steps as run_steps
from carry.replay.targets import ResolvedTarget, fork_line
from carry.series.store import Series

if TYPE_CHECKING:  # loaded where a replay starts, not by a `--skip` that only reads results
    from carry.replay import rerere
    from carry.replay.audit import AuditFinding
    from carry.replay.chain import Carried
    from carry.replay.drops import Drop
    from carry.replay.furthest import Furthest


@dataclass
class Conflict:
    file: str
    subject: str
    author: str
    paths: list[str]
    worktree: str
    squash_hints: list[str] = field(default_factory=list)


class TargetStatus(enum.StrEnum):
    """How one target's rebase ended: every patch in, stopped at a conflict, or failed
    (the message says why)."""

    APPLIED = "applied"
    CONFLICT = "conflict"
    FAILED = "failed"


@dataclass
class Refreshed:
    """The series version a `--refresh` wrote: its number, its tag ("" when none could be
    made) and its patch files."""

    version: int
    tag: str
    files: list[str]


@dataclass
class NotRecorded:
    """A path whose resolution `--continue` could not keep, and why ("" for the patch)."""

    path: str
    why: str


@dataclass
class ResolutionRecord:
    """What `--continue` recorded of a resolution of `patch`: the series version it wrote
    (0 for none) with its tag and resolution files, the ones recorded already, and the paths
    it could not keep."""

    patch: str
    version: int = 0
    tag: str = ""
    files: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    not_recorded: list[NotRecorded] = field(default_factory=list)


@dataclass
class TargetResult:
    series: str
    target: str
    ref: str
    onto: str
    status: TargetStatus
    head: str
    patches: list[PatchResult]
    branch: str = ""
    updated: bool = False
    dry_run: bool = False
    conflict: Conflict | None = None
    message: str = ""
    refreshed: Refreshed | None = field(default=None, metadata=EMPTY_WHEN_NONE)
    recorded: ResolutionRecord | None = field(default=None, metadata=EMPTY_WHEN_NONE)
    line: str = ""  # the target's name when it is a fork branch, not upstream's line (`why`)
    audit: list[AuditFinding] = field(default_factory=list)  # replay.audit: clean, not correct
    furthest: Furthest | None = None  # --furthest: where on the target's line it went, and why

    json_extra = ("why",)

    @property
    def why(self) -> list[dict[str, Any]]:
        """Each conflicting patch and why it conflicts, root conflicts first."""
        from carry.replay.causes import explain  # its words: a stop's report runs no search

        return explain(self.patches, self.line)

    def count(self, status: str) -> int:
        return sum(1 for p in self.patches if p.status == status)


@dataclass
class Replayed:
    """A replay's outcome: the result, where it stopped (None: it did not), the paths of the
    stop and the head so far (the commit a resolution goes on); `trial`, the forecast's
    replay of the rest with the stop left out, which a `--skip` takes as it is; `auto`,
    whether conflicts their three texts decide resolved by themselves (`--no-auto-resolve`
    off), which the saved state keeps for the resume."""

    result: TargetResult
    stop: int | None
    paths: list[str]
    head: str
    trial: list[PatchResult] = field(default_factory=list)
    auto: bool = True


def steps_for(carried: Sequence[Carried], drops: dict[int, Drop]) -> list[PatchResult]:
    out = []
    for c in carried:
        step = PatchResult(c.number, c.file, c.patch.subject, c.patch.author.name,
                           source=c.commit.sha)
        drop = drops.get(c.number)
        if drop:
            step.status, step.reason = PatchStatus.DROPPED, drop.reason
            step.upstream = drop.upstream
        out.append(step)
    return out


def forecast(repo: Repo, steps: list[PatchResult], stop: int, head: str,
             committer: Ident, recorded: rerere.Recorded | None = None,
             onto: str = "", paths: Sequence[str] = ()) -> list[PatchResult]:
    """Which later patches would conflict too: the rest of the series replayed with the
    stopping patch (and each further conflict) left out, on copies; each such patch gets its
    paths in `forecast` and the status `would-conflict`, which a resume turns back into
    `pending`. Returns that trial: it is exactly what `--skip` replays, so the rebase keeps
    it in its state and a skip takes its commits instead of merging again. Given the target
    commit `onto`, each conflict also gets its why (`replay.why`), worked out on another
    thread while the forecast goes on (`paths`: where the stop conflicts)."""
    from carry.replay import why as whymod  # a skip forecasts nothing: it takes the trial

    trial = [replace(s) for s in steps]
    trial[stop].status = PatchStatus.SKIPPED
    why = whymod.Why(repo, steps, onto) if onto else None
    try:
        if why:
            why.add(stop, paths)
        while True:
            head, again, paths = run_steps(repo, trial, head, committer,
                                             recorded=recorded)
            if again is None:
                break
            steps[again].status, steps[again].forecast = PatchStatus.WOULD_CONFLICT, paths
            if why:
                why.add(again, paths)
            trial[again].status = PatchStatus.SKIPPED
        if why:
            why.finish()
    finally:
        if why:
            why.close()
    return trial


def resolutions(series: Series, auto: bool = True) -> rerere.Recorded:
    """The series' recorded resolutions, and whether a conflict whose three texts decide it
    resolves by itself: unless `auto` (`--no-auto-resolve`) or the manifest's
    `policy.auto_resolve` is off."""
    from carry.replay import rerere

    return rerere.load(series.root, auto and series.manifest.policy.auto_resolve)


def replay_target(series: Series, repo: Repo, base: str, carried: Sequence[Carried],
                  target: ResolvedTarget, committer: Ident, auto: bool = True) -> Replayed:
    """Drop detection and the replay at once.

    The replay starts speculatively, as if nothing were dropped, while detection runs on the
    other core. Most rebases drop nothing and are done when both finish; otherwise the steps
    before the first dropped patch are kept (the same inputs give the same commits) and the
    rest is replayed again. A conflict the series' recorded resolutions resolve does not
    stop it (`rerere`), nor one whose three texts decide it, unless `auto` or the
    manifest's `policy.auto_resolve` is off (`autoresolve`)."""
    from concurrent.futures import ThreadPoolExecutor

    from carry.replay.drops import find_drops

    recorded = resolutions(series, auto)
    detector = repo.fork()
    m = series.manifest
    try:
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(find_drops, detector, carried, base, target.sha,
                                 m.provenance, m.upstream.repo)
            steps = steps_for(carried, {})
            head, stop, paths = run_steps(repo, steps, target.sha, committer,
                                          recorded=recorded)
            drops = future.result()
    finally:
        detector.close()
    first = next((i for i, c in enumerate(carried) if c.number in drops), None)
    if first is not None and (stop is None or first <= stop):
        redo = steps_for(carried, drops)
        head = target.sha
        for i in range(first):
            redo[i] = steps[i]
            head = steps[i].commit or head
        steps = redo
        head, stop, paths = run_steps(repo, steps, head, committer, recorded=recorded)
    elif stop is not None:  # the stop came before any drop: mark the later drops
        for step, c in zip(steps[stop + 1:], carried[stop + 1:], strict=True):
            if c.number in drops:
                step.status, step.reason = PatchStatus.DROPPED, drops[c.number].reason
                step.upstream = drops[c.number].upstream
    trial = forecast(repo, steps, stop, head, committer, recorded, onto=target.sha,
                     paths=paths) if stop is not None else []
    status = TargetStatus.APPLIED if stop is None else TargetStatus.CONFLICT
    result = TargetResult(series.name, target.name, target.ref, target.sha, status,
                          head if stop is None else "", steps,
                          line=fork_line(series, target.name, target.ref))
    if stop is None:
        result.audit = audited(repo, result)
    return Replayed(result, stop, paths, head, trial, auto)


def audited(repo: Repo, result: TargetResult) -> list[AuditFinding]:
    """The audit of an applied result (`replay.audit`): what its clean patches break."""
    from carry.replay import audit

    return audit.run(repo, result.patches, result.head, result.onto)


def replay(series: Series, repo: Repo, onto: str) -> TargetResult:
    """Replay the series onto `onto` and return the outcome, writing no user ref, no state
    and no worktree: for callers (validation) that only need the rebased tree."""
    from carry.replay.chain import load_chain

    base, carried = load_chain(series, repo)
    target = ResolvedTarget(onto, onto, repo.rev_parse(onto))
    done = replay_target(series, repo, base, carried, target, repo.committer_ident())
    if done.stop is not None:
        step = done.result.patches[done.stop]
        done.result.conflict = Conflict(step.file, step.subject, step.author, done.paths, "")
    return done.result
