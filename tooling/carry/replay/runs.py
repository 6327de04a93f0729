"""The replay's runs: pending patches cut once into runs of disjoint paths, one merge each,
the next merge started while carry writes the trees and commits of the one before; a run
that cannot be batched goes patch by patch. `engine` puts drop detection, the forecast and
the results around it."""

from __future__ import annotations

import enum
import hashlib
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from carry.base.atomic import write_bytes
from carry.base.errors import CarryError
from carry.git import Entry, Ident, MergeResult, PendingMerge, RawCommit, Repo, parse_changes

if TYPE_CHECKING:  # a skip replays nothing: the resolutions are read where a replay is
    from carry.replay import rerere

Changes = dict[bytes, tuple[Entry | None, Entry | None]]
Run = list[tuple[int, RawCommit]]  # consecutive steps (index, commit on the series base)


class PatchStatus(enum.StrEnum):
    """What became of one patch in one target (a `would-conflict` is the forecast's)."""

    APPLIED = "applied"
    DROPPED = "dropped"
    CONFLICT = "conflict"
    SKIPPED = "skipped"
    PENDING = "pending"
    WOULD_CONFLICT = "would-conflict"


@dataclass
class PatchResult:
    """One patch in one target. `source` is the patch as a commit on the series base,
    `commit` the rebased commit, `upstream` the commit that made it a drop; `forecast` the
    paths on which a `would-conflict` patch conflicts too once the stop is dealt with;
    `resolutions` the recorded resolutions (`NNNN-<id>`) that resolved its conflict.
    Why a conflict happens (`replay.why`): `cause` the first upstream commit after which the
    patch stops applying (sha, subject, pr), or `builds_on` the earlier patch file, itself
    left out, whose lines this one changes."""

    number: int
    file: str
    subject: str
    author: str
    status: PatchStatus = PatchStatus.PENDING
    reason: str = ""
    commit: str = ""
    upstream: str = ""
    source: str = ""
    forecast: list[str] = field(default_factory=list)
    resolutions: list[str] = field(default_factory=list)
    cause: dict[str, Any] | None = None
    builds_on: str = ""
    look: str = ""  # a root conflict no single target commit explains: the `git log` to read


def run_steps(repo: Repo, steps: list[PatchResult], head: str, committer: Ident,
              batch: bool = True, recorded: rerere.Recorded | None = None
              ) -> tuple[str, int | None, list[str]]:
    """Replay every pending step onto `head`; returns the new head, and the index and paths
    of the step that conflicted, if one did. A conflict that `recorded` resolves does not
    stop the replay (`_resolved`).

    The series is cut once into runs (`_plan`), each one merge; a run that cannot be
    batched goes patch by patch and is never tried again: the cost is linear in the series,
    whatever its shape. A run's merge starts as soon as the run before has its merge's tree,
    so git merges while carry writes the trees and commits of the run before."""
    head_tree = repo.read_commit(head).tree
    pending = {i: step.source for i, step in enumerate(steps) if step.status == "pending"}
    every = [step.source for step in steps if step.source]  # one key for every subset
    known = commit_changes(repo, every) if batch and len(pending) > 1 else {}
    changes: dict[int, Changes] = {i: known[sha] for i, sha in pending.items() if sha in known}
    runs = _plan(repo, steps, changes, batch)
    if len(runs) > 1:  # the target's trees the merges will change, read in a few exchanges
        repo.read_paths(head_tree, {p for ch in changes.values() for p in ch})
    ahead = _start(repo, runs[0], head_tree) if runs else None
    if recorded is None:
        from carry.replay.rerere import Recorded

        recorded = Recorded()
    ctx = _Replay(repo, steps, changes, committer, recorded)
    return _run(ctx, runs, head, head_tree, ahead)


@dataclass(frozen=True)
class _Replay:
    """What every merge of one `run_steps` shares: the steps it fills in, the patches'
    changes, the committer, and the resolutions a conflict may take."""

    repo: Repo
    steps: list[PatchResult]
    changes: dict[int, Changes]
    committer: Ident
    recorded: rerere.Recorded


def _run(ctx: _Replay, runs: list[Run], head: str, head_tree: str,
         ahead: PendingMerge | None) -> tuple[str, int | None, list[str]]:
    repo, steps, changes, committer = ctx.repo, ctx.steps, ctx.changes, ctx.committer
    try:
        for k, run in enumerate(runs):
            known: MergeResult | None = None  # the first patch's conflict, found by the run's
            try:
                merged, ok = (ahead.result(), True) if ahead else (None, True)
            except CarryError:
                if len(run) == 1:
                    raise
                merged, ok = None, False
            if merged is not None and not merged.clean:
                if len(run) == 1:  # the run's merge is the patch's own (`_start`)
                    j, c = run[0]
                    merged = repo.known_conflict(c, head_tree, merged.tree, merged.stages) \
                        or repo.replay_tree(c, head_tree)
                    fixed = resolved(repo, ctx.recorded, steps[j], c, head, committer)
                    if fixed is None:
                        steps[j].status = PatchStatus.CONFLICT
                        return head, j, sorted(set(merged.conflicts))
                    head, head_tree = fixed
                    ahead = _start(repo, runs[k + 1], head_tree) if k + 1 < len(runs) else None
                    continue
                ok = False
                blame = _blame(repo, run, changes, head_tree, merged)
                if blame is not None:
                    for (j, c), tree in zip(run, blame.prefix, strict=False):
                        head, head_tree = _commit(repo, steps[j], c, tree, head, head_tree,
                                                  committer)
                    run = run[len(blame.prefix):]
                    known = repo.known_conflict(run[0][1], head_tree, blame.tree, blame.stages)
            last = merged.tree if merged else run[-1][1].tree
            ahead = _start(repo, runs[k + 1], last) if ok and k + 1 < len(runs) else None
            trees = _trees(repo, run, changes, head_tree, merged) if ok else None
            if trees is None:  # the run goes patch by patch, and the next merge starts again
                if ahead:
                    with suppress(CarryError):
                        ahead.result()
                head, head_tree, stop = _one_by_one(ctx, run, head, head_tree, known)
                if stop is not None:
                    return head, stop[0], stop[1]
                ahead = _start(repo, runs[k + 1], head_tree) if k + 1 < len(runs) else None
                continue
            for (j, c), tree in zip(run, trees, strict=True):
                head, head_tree = _commit(repo, steps[j], c, tree, head, head_tree, committer)
        return head, None, []
    finally:
        if ahead is not None:
            ahead.proc.wait()  # never left running, whatever stopped the replay


def commit_changes(repo: Repo, shas: list[str]) -> dict[str, Changes]:
    """Each commit's changes, kept under `.git/carry/changes/` (the newest 32 lists of
    commits): commits never change, so a daily replay of a cached chain, or the forecast's
    replays of its subsets, do not diff them again."""
    key = hashlib.sha256("\0".join(["carry-changes-1", *shas]).encode()).hexdigest()[:40]
    folder = repo.carry_dir() / "changes"
    with suppress(OSError):
        kept = _checked((folder / key).read_bytes())
        if kept is not None:
            return parse_changes(kept)
    raw = repo.commit_changes_raw(shas)
    with suppress(OSError):  # a cache that cannot be written is only slower
        write_bytes(folder / key, hashlib.sha256(raw).hexdigest().encode() + b"\n" + raw)
        for old in sorted(folder.iterdir(), key=lambda f: f.stat().st_mtime)[:-32]:
            old.unlink()
    return parse_changes(raw)


def _checked(data: bytes) -> bytes | None:
    """The cached diff, if its checksum holds: the trees of a batch are derived from these
    changes, so a damaged file must cost a diff, never a wrong commit."""
    digest, _, raw = data.partition(b"\n")
    return raw if hashlib.sha256(raw).hexdigest().encode() == digest else None


def _commit(repo: Repo, step: PatchResult, c: RawCommit, tree: str, head: str, head_tree: str,
            committer: Ident) -> tuple[str, str]:
    """The patch's commit on `head` (none when it changes nothing there); the new head."""
    if tree == head_tree:
        step.status, step.reason = PatchStatus.DROPPED, "empty after replay"
        return head, head_tree
    head = repo.write_commit(tree, [head], c.message, c.author, committer, c.encoding)
    step.status, step.commit = PatchStatus.APPLIED, head
    return head, tree


def _one_by_one(ctx: _Replay, run: Run, head: str, head_tree: str,
                known: MergeResult | None = None
                ) -> tuple[str, str, tuple[int, list[str]] | None]:
    """A run merged patch by patch; stops at the first conflict that no recorded resolution
    resolves, nor its own three texts (its index and paths). `known`: the first patch's
    conflict, already found (`_blame`)."""
    repo, steps, committer = ctx.repo, ctx.steps, ctx.committer
    for n, (j, c) in enumerate(run):
        if (n or known is None) and repo.read_commit(c.parents[0]).tree == head_tree:
            tree = c.tree  # nothing moved under this patch: its own tree is the result
        else:
            merged = known if n == 0 and known is not None else repo.replay_tree(c, head_tree)
            if not merged.clean:
                fixed = resolved(repo, ctx.recorded, steps[j], c, head, committer)
                if fixed is None:
                    steps[j].status = PatchStatus.CONFLICT
                    return head, head_tree, (j, sorted(set(merged.conflicts)))
                head, head_tree = fixed
                continue
            tree = merged.tree
        head, head_tree = _commit(repo, steps[j], c, tree, head, head_tree, committer)
    return head, head_tree, None


def resolved(repo: Repo, recorded: rerere.Recorded, step: PatchResult, c: RawCommit,
             head: str, committer: Ident) -> tuple[str, str] | None:
    """The conflicting patch `c` committed on `head` with its recorded resolution, or with
    the hunks that resolve by themselves (`recorded.auto`): the new head and tree, the step
    marked so that every view says which resolution of which version did it, or which hunk
    resolved by itself and how. None when they do not cover every conflicted hunk, and the
    replay stops as before. The one place a replay, or a `--continue` that finds the
    conflict recorded since (`resolution.take_recorded`), commits a resolution it did not
    get by hand."""
    from carry.replay import rerere

    head_tree = repo.read_commit(head).tree
    fixed = rerere.apply(repo, recorded, step.number, c, head_tree)
    if fixed is None:
        return None
    head, head_tree = _commit(repo, step, c, fixed.tree, head, head_tree, committer)
    step.reason = fixed.reason + (", and then empty" if step.status == "dropped" else "")
    step.resolutions = [r.name for r in fixed.used] + [f"auto: {x}" for x in fixed.auto]
    return head, head_tree


def _start(repo: Repo, run: Run, head_tree: str) -> PendingMerge | None:
    """The run's one merge onto `head_tree`, started; None when nothing moved under the run
    (each patch's own tree is then its result)."""
    first = run[0][1]
    if repo.read_commit(first.parents[0]).tree == head_tree:
        return None
    graft = repo.write_commit(head_tree, first.parents[:1], b"carry graft\n", first.author,
                              first.author)
    return repo.start_merge(graft, run[-1][1].sha, staged=True)


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
        diff = _foreseen(repo, head_tree, merged.tree, changes)
        if diff is None:
            repo.derive_tree(head_tree, merged.tree, paths)
            diff = {p: new for p, (_, new) in repo.tree_changes(head_tree, merged.tree).items()}
            if not diff.keys() <= paths:
                return None
        out, tree = [], head_tree
        for ch in changes[:-1]:
            edits = {p: diff[p] for p in ch if p in diff}
            if edits:
                tree = repo.edit_tree(tree, edits) or repo.write_object("tree", b"")
            out.append(tree)
    except CarryError:
        return None
    return [*out, merged.tree]  # the last patch's tree is the merge's own


@dataclass(frozen=True)
class _Blame:
    """What a run's conflicted merge says of its patches: the trees of those before the
    first it blames, and that patch's own conflicted tree and stages."""

    prefix: list[str]
    tree: str
    stages: dict[bytes, dict[int, Entry]]


def _blame(repo: Repo, run: Run, cache: dict[int, Changes], head_tree: str,
           merged: MergeResult) -> _Blame | None:
    """The run's conflicted merge taken apart patch by patch, up to the first patch it
    blames; None when it cannot say. The run's paths are disjoint, so a conflicted path
    names the one patch that changes it, and every path of that patch and the earlier ones
    merged with the three inputs it would have met alone (`_batchable`): one merge per
    patch would give the same trees and the same conflict. A conflicted path no patch
    changes, or a result outside the run's paths (an upstream rename), leaves the run to go
    patch by patch."""
    changes = [cache[j] for j, _ in run]
    owner = {path: k for k, ch in enumerate(changes) for path in ch}
    blamed = {owner.get(path) for path in merged.stages}
    if not blamed or None in blamed:
        return None
    first = min(k for k in blamed if k is not None)
    try:
        diff = {p: new for p, (_, new) in repo.tree_changes(head_tree, merged.tree).items()}
        if not diff.keys() <= owner.keys():
            return None
        out, tree = [], head_tree
        for ch in changes[:first + 1]:
            edits = {p: diff[p] for p in ch if p in diff}
            if edits:
                tree = repo.edit_tree(tree, edits) or repo.write_object("tree", b"")
            out.append(tree)
    except CarryError:
        return None
    return _Blame(out[:-1], out[-1], {p: st for p, st in merged.stages.items()
                                      if owner[p] == first})


def _foreseen(repo: Repo, head_tree: str, merged_tree: str, changes: list[Changes]
              ) -> dict[bytes, Entry | None] | None:
    """What the merge changed, when it is what a trivial merge of every path gives (the
    patch's version wherever upstream has what the patch found there, or the patch's own
    version), checked by the tree's id: then none of the merge's trees is read, nor diffed."""
    edits: dict[bytes, Entry | None] = {}
    for ch in changes:
        for path, (old, new) in ch.items():
            have = repo.tree_lookup(head_tree, path)
            if have not in (old, new):
                return None  # a real three-way merge: its result is read
            if have != new:
                edits[path] = new
    return edits if repo.predict_tree(head_tree, edits, merged_tree) else None
