"""Replay a chain onto a target: the worktree-free merge-tree recipe (facts.md) with the graft
and result commits written in-process, so a patch costs at most one `git merge-tree`, and a
run of patches on disjoint paths costs one for the whole run.

The engine writes no ref, state or worktree: `rebase` decides what a result means for the
user's branches, `validate` only needs the rebased tree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any

from carry.atomic import write_bytes
from carry.errors import CarryError
from carry.git import (
    Entry,
    Ident,
    MergeResult,
    PendingMerge,
    RawCommit,
    Repo,
    parse_changes,
)
from carry.replay.chain import Carried, load_chain
from carry.replay.drops import Drop, find_drops
from carry.replay.targets import ResolvedTarget
from carry.series import Series

Changes = dict[bytes, tuple[Entry | None, Entry | None]]
Run = list[tuple[int, RawCommit]]  # consecutive steps (index, commit on the series base)


@dataclass
class PatchResult:
    """One patch in one target. `source` is the patch as a commit on the series base,
    `commit` the rebased commit, `upstream` the commit that made it a drop; `forecast` the
    paths on which a `would-conflict` patch conflicts too once the stop is dealt with."""

    number: int
    file: str
    subject: str
    author: str
    status: str = "pending"  # applied | dropped | conflict | skipped | pending | would-conflict
    reason: str = ""
    commit: str = ""
    upstream: str = ""
    source: str = ""
    forecast: list[str] = field(default_factory=list)


@dataclass
class Conflict:
    file: str
    subject: str
    author: str
    paths: list[str]
    worktree: str
    squash_hints: list[str] = field(default_factory=list)


@dataclass
class TargetResult:
    series: str
    target: str
    ref: str
    onto: str
    status: str  # applied | conflict | failed
    head: str
    patches: list[PatchResult]
    branch: str = ""
    updated: bool = False
    dry_run: bool = False
    conflict: Conflict | None = None
    message: str = ""
    refreshed: dict[str, Any] = field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(1 for p in self.patches if p.status == status)


@dataclass
class Replayed:
    """A replay's outcome: the result, where it stopped (None: it did not), the paths of the
    stop and the head so far (the commit a resolution goes on)."""

    result: TargetResult
    stop: int | None
    paths: list[str]
    head: str


def steps_for(carried: Sequence[Carried], drops: dict[int, Drop]) -> list[PatchResult]:
    out = []
    for c in carried:
        step = PatchResult(c.number, c.file, c.patch.subject, c.patch.author.name,
                           source=c.commit.sha)
        drop = drops.get(c.number)
        if drop:
            step.status, step.reason, step.upstream = "dropped", drop.reason, drop.upstream
        out.append(step)
    return out


def run_steps(repo: Repo, steps: list[PatchResult], head: str, committer: Ident,
              batch: bool = True) -> tuple[str, int | None, list[str]]:
    """Replay every pending step onto `head`; returns the new head, and the index and paths
    of the step that conflicted, if one did.

    The series is cut once into runs (`_plan`), each one merge; a run that cannot be
    batched goes patch by patch and is never tried again: the cost is linear in the series,
    whatever its shape. A run's merge starts as soon as the run before has its merge's tree,
    so git merges while carry writes the trees and commits of the run before."""
    head_tree = repo.read_commit(head).tree
    pending = {i: step.source for i, step in enumerate(steps) if step.status == "pending"}
    known = _commit_changes(repo, list(pending.values())) if batch and len(pending) > 1 else {}
    changes: dict[int, Changes] = {i: known[sha] for i, sha in pending.items() if sha in known}
    runs = _plan(repo, steps, changes, batch)
    if len(runs) > 1:  # the target's trees the merges will change, read in a few exchanges
        repo.read_paths(head_tree, {p for ch in changes.values() for p in ch})
    ahead = _start(repo, runs[0], head_tree) if runs else None
    for k, run in enumerate(runs):
        try:
            merged, ok = (ahead.result(), True) if ahead else (None, True)
        except CarryError:
            if len(run) == 1:
                raise
            merged, ok = None, False
        if merged is not None and not merged.clean:
            if len(run) == 1:
                steps[run[0][0]].status = "conflict"
                return head, run[0][0], sorted(set(merged.conflicts))
            ok = False
        last = merged.tree if merged else run[-1][1].tree
        ahead = _start(repo, runs[k + 1], last) if ok and k + 1 < len(runs) else None
        trees = _trees(repo, run, changes, head_tree, merged) if ok else None
        if trees is None:  # the run goes patch by patch, and the next merge starts again
            if ahead:
                with suppress(CarryError):
                    ahead.result()
            head, head_tree, stop = _one_by_one(repo, steps, run, head, head_tree, committer)
            if stop is not None:
                return head, stop[0], stop[1]
            ahead = _start(repo, runs[k + 1], head_tree) if k + 1 < len(runs) else None
            continue
        for (j, c), tree in zip(run, trees, strict=True):
            head, head_tree = _commit(repo, steps[j], c, tree, head, head_tree, committer)
    return head, None, []


def _commit_changes(repo: Repo, shas: list[str]) -> dict[str, Changes]:
    """Each commit's changes, kept under `.git/carry/changes/` per list of commits: commits
    never change, so a daily replay of a cached chain does not diff them again."""
    key = hashlib.sha256("\0".join(["carry-changes-1", *shas]).encode()).hexdigest()[:40]
    path = repo.carry_dir() / "changes" / key
    with suppress(OSError):
        return parse_changes(path.read_bytes())
    raw = repo.commit_changes_raw(shas)
    with suppress(OSError):  # a cache that cannot be written is only slower
        write_bytes(path, raw)
    return parse_changes(raw)


def _commit(repo: Repo, step: PatchResult, c: RawCommit, tree: str, head: str, head_tree: str,
            committer: Ident) -> tuple[str, str]:
    """The patch's commit on `head` (none when it changes nothing there); the new head."""
    if tree == head_tree:
        step.status, step.reason = "dropped", "empty after replay"
        return head, head_tree
    head = repo.write_commit(tree, [head], c.message, c.author, committer, c.encoding)
    step.status, step.commit = "applied", head
    return head, tree


def _one_by_one(repo: Repo, steps: list[PatchResult], run: Run, head: str, head_tree: str,
                committer: Ident) -> tuple[str, str, tuple[int, list[str]] | None]:
    """A run merged patch by patch; stops at the first conflict (its index and paths)."""
    for j, c in run:
        if repo.read_commit(c.parents[0]).tree == head_tree:
            tree = c.tree  # nothing moved under this patch: its own tree is the result
        else:
            merged = repo.replay_tree(c, head_tree)
            if not merged.clean:
                steps[j].status = "conflict"
                return head, head_tree, (j, sorted(set(merged.conflicts)))
            tree = merged.tree
        head, head_tree = _commit(repo, steps[j], c, tree, head, head_tree, committer)
    return head, head_tree, None


def _start(repo: Repo, run: Run, head_tree: str) -> PendingMerge | None:
    """The run's one merge onto `head_tree`, started; None when nothing moved under the run
    (each patch's own tree is then its result)."""
    first = run[0][1]
    if repo.read_commit(first.parents[0]).tree == head_tree:
        return None
    graft = repo.write_commit(head_tree, first.parents[:1], b"carry graft\n", first.author,
                              first.author)
    return repo.start_merge(graft, run[-1][1].sha)


def _changes(repo: Repo, c: RawCommit, cache: dict[int, Changes], j: int) -> Changes | None:
    if j not in cache:
        try:
            cache[j] = repo.tree_changes(repo.read_commit(c.parents[0]).tree, c.tree)
        except CarryError:  # a path that changes type: never batched
            return None
    return cache[j]


def _plan(repo: Repo, steps: list[PatchResult], cache: dict[int, Changes],
          batch: bool) -> list[Run]:
    """The pending steps cut into runs, in order: the longest batchable run from each step
    (`_run_from`), or one step per run without `batch`."""
    runs: list[Run] = []
    i = 0
    while i < len(steps):
        if steps[i].status != "pending":
            i += 1
            continue
        run = _run_from(repo, steps, i, cache) if batch else []
        if not run:
            run = [(i, repo.read_commit(steps[i].source))]
        if len(run) == 1 or _batchable([cache[j] for j, _ in run]):
            runs.append(run)
        else:  # patch by patch, and never scanned again
            runs.extend([x] for x in run)
        i = run[-1][0] + 1
    return runs


def _run_from(repo: Repo, steps: list[PatchResult], start: int,
              cache: dict[int, Changes]) -> Run:
    """The longest run of pending patches from `start`, each on the one before it, whose
    paths are pairwise disjoint and never one inside another (a file/directory swap): an
    overlap ends the run before the overlapping patch, which then starts the next run."""
    run: Run = []
    seen: set[bytes] = set()
    seen_dirs: set[bytes] = set()
    for j in range(start, len(steps)):
        c = repo.read_commit(steps[j].source)
        if steps[j].status != "pending" or (run and c.parents[:1] != (run[-1][1].sha,)):
            break
        ch = _changes(repo, c, cache, j)
        if ch is None:
            break
        dirs = {p[:i] for p in ch for i in range(len(p)) if p[i:i + 1] == b"/"}
        if run and (seen & ch.keys() or dirs & seen or seen_dirs & ch.keys()):
            break
        seen |= ch.keys()
        seen_dirs |= dirs
        run.append((j, c))
    return run


def _batchable(changes: list[Changes]) -> bool:
    """Whether one merge of the run's patches gives the trees one merge each would.

    When the patches of a run touch pairwise different paths, each path's merge has the same
    three inputs whether the run is merged patch by patch or at once (its base, upstream's
    version, the patch's version), so one `merge-tree` of the whole run gives every path's
    result, and each patch's tree is upstream's tree with the results of its own and the
    earlier patches' paths put in. A deletion and an addition in different patches (a rename
    git could pair across patches) could make the two ways differ; a conflict or a merge
    result outside the run's paths is found after the merge (`_trees`)."""
    deleting = {k for k, ch in enumerate(changes) if any(new is None for _, new in ch.values())}
    adding = {k for k, ch in enumerate(changes) if any(old is None for old, _ in ch.values())}
    return not (deleting and adding and len(deleting | adding) > 1)


def _trees(repo: Repo, run: Run, cache: dict[int, Changes], head_tree: str,
           merged: MergeResult | None) -> list[str] | None:
    """Each patch's tree from the run's one clean merge (None: nothing moved under it), or
    None when the merge changed something outside the run's paths (an upstream rename), so
    that the patches go one by one."""
    if merged is None:
        return [c.tree for _, c in run]
    if len(run) == 1:
        return [merged.tree]
    changes = [cache[j] for j, _ in run]
    paths: set[bytes] = set().union(*changes)
    try:
        repo.derive_tree(head_tree, merged.tree, paths)
        diff = repo.tree_changes(head_tree, merged.tree)
        if not diff.keys() <= paths:
            return None
        out, tree = [], head_tree
        for ch in changes[:-1]:
            edits = {p: diff[p][1] for p in ch if p in diff}
            if edits:
                tree = repo.edit_tree(tree, edits) or repo.write_object("tree", b"")
            out.append(tree)
    except CarryError:
        return None
    return [*out, merged.tree]  # the last patch's tree is the merge's own


def forecast(repo: Repo, steps: list[PatchResult], stop: int, head: str,
             committer: Ident) -> None:
    """Which later patches would conflict too: the rest of the series replayed with the
    stopping patch (and each further conflict) left out, on copies; each such patch gets its
    paths in `forecast` and the status `would-conflict`, which a resume turns back into
    `pending`. Nothing else is kept: the trial's commits are unreferenced."""
    trial = [replace(s) for s in steps]
    trial[stop].status = "skipped"
    while True:
        head, again, paths = run_steps(repo, trial, head, committer)
        if again is None:
            return
        steps[again].status, steps[again].forecast = "would-conflict", paths
        trial[again].status = "skipped"


def replay_target(series: Series, repo: Repo, base: str, carried: Sequence[Carried],
                  target: ResolvedTarget, committer: Ident) -> Replayed:
    """Drop detection and the replay at once.

    The replay starts speculatively, as if nothing were dropped, while detection runs on the
    other core. Most rebases drop nothing and are done when both finish; otherwise the steps
    before the first dropped patch are kept (the same inputs give the same commits) and the
    rest is replayed again."""
    detector = repo.fork()
    m = series.manifest
    try:
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(find_drops, detector, carried, base, target.sha,
                                 m.provenance, m.upstream.repo)
            steps = steps_for(carried, {})
            head, stop, paths = run_steps(repo, steps, target.sha, committer)
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
        head, stop, paths = run_steps(repo, steps, head, committer)
    elif stop is not None:  # the stop came before any drop: mark the later drops
        for step, c in zip(steps[stop + 1:], carried[stop + 1:], strict=True):
            if c.number in drops:
                step.status, step.reason = "dropped", drops[c.number].reason
                step.upstream = drops[c.number].upstream
    if stop is not None:
        forecast(repo, steps, stop, head, committer)
    status = "applied" if stop is None else "conflict"
    result = TargetResult(series.name, target.name, target.ref, target.sha, status,
                          head if stop is None else "", steps)
    return Replayed(result, stop, paths, head)


def replay(series: Series, repo: Repo, onto: str) -> TargetResult:
    """Replay the series onto `onto` and return the outcome, writing no user ref, no state
    and no worktree: for callers (validation) that only need the rebased tree."""
    base, carried = load_chain(series, repo)
    target = ResolvedTarget(onto, onto, repo.rev_parse(onto))
    done = replay_target(series, repo, base, carried, target, repo.committer_ident())
    if done.stop is not None:
        step = done.result.patches[done.stop]
        done.result.conflict = Conflict(step.file, step.subject, step.author, done.paths, "")
    return done.result
