"""`carry rebase`: replay a series onto its targets with no worktree, drop what upstream has,
stop safely on a conflict, and write the new version back with `--refresh`.

The replay is the 2.39 merge-tree recipe (facts.md) with the graft and result commits written
in-process, so a patch costs one `git merge-tree`. The patches themselves come from a cached
chain: the series committed onto its recorded base with a fixed committer, kept under
`refs/carry/cache/<hash of base and patch bytes>`, so a daily rebase of an unchanged series
never parses or applies a patch file again.

Nothing a user sees moves until the end: each target gets one compare-and-swap ref update,
only when every patch applied. A stop writes a versioned JSON state under `.git/carry/rebase/`
(atomically, with os.replace) and a conflict worktree; `--continue`, `--skip` and `--abort`
pick up from that state, whatever phase a `kill -9` interrupted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from carry import patches as patchmod
from carry import upstream
from carry.errors import CarryError
from carry.git import GitError, Ident, RawCommit, Repo
from carry.series import Base, Series
from carry.upstream import Carried, Drop, ResolvedTarget

STATE_VERSION = 1
CACHE_PREFIX = "refs/carry/cache/"
_MARKER = re.compile(rb"^(?:<{7}|>{7})(?: |$)", re.M)
_ORIGIN = re.compile(rb"^From ([0-9a-f]{40}) ")


@dataclass
class PatchResult:
    """One patch in one target. `source` is the patch as a commit on the series base,
    `commit` the rebased commit, `upstream` the commit that made it a drop."""

    number: int
    file: str
    subject: str
    author: str
    status: str = "pending"  # applied | dropped | conflict | skipped | pending
    reason: str = ""
    commit: str = ""
    upstream: str = ""
    source: str = ""


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
class Options:
    onto: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    branch: str | None = None
    refresh: bool = False
    fetch: bool = False
    dry_run: bool = False


# -- the cached chain ---------------------------------------------------------------------------


def resolve_base(repo: Repo, base: Base, what: str, hint: str) -> str:
    """The commit a series (or one of its versions, `what`) applies to, present in `repo`."""
    rev = base.commit or base.ref
    if not rev:
        raise CarryError(f"{what} records no base")
    sha = repo.try_rev_parse(rev)
    if sha is None:
        raise CarryError(f"the base {rev} of {what} is not in {repo.path}", hint=hint)
    return sha


def series_base(series: Series, repo: Repo) -> str:
    return resolve_base(repo, series.manifest.base, f"series {series.name}",
                        "pass --fetch, or fetch the fork")


def chain(repo: Repo, files: Sequence[tuple[int, str, bytes]], base: str) -> list[Carried]:
    """The patches (number, file name, bytes) committed onto `base`, built once per base and
    patch bytes, then cached under a ref.

    On a cache hit no patch is parsed: each commit already holds its patch's exact author and
    message, which is all that drop detection and the replay read; the origin comes from the
    patch's `From <sha>` line. A miss parses with git and commits through `apply.materialize`.
    """
    if not files:
        return []
    key = hashlib.sha256(b"carry-chain-1\0" + base.encode())
    for _, name, data in files:
        key.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(data).digest())
    ref = CACHE_PREFIX + key.hexdigest()[:40]
    shas = _cached(repo, ref, base, len(files))
    if shas is not None:
        out = []
        for (number, name, data), sha in zip(files, shas, strict=True):
            commit = repo.read_commit(sha)
            m = _ORIGIN.match(data)
            patch = patchmod.Patch(number, name, m.group(1).decode() if m else "",
                                   commit.author, commit.message, b"", (), commit.encoding)
            out.append(Carried(number, name, patch, commit))
        return out
    plist = [patchmod.parse(number, name, data) for number, name, data in files]
    stamp = repo.read_commit(base).committer.date
    shas = materialize(repo, plist, base, Ident("carry", "carry@cache", stamp))
    repo.update_ref(ref, shas[-1], message="carry cache")
    return [Carried(p.number, p.file, p, repo.read_commit(s))
            for p, s in zip(plist, shas, strict=True)]


def materialize(repo: Repo, plist: Sequence[patchmod.Patch], base: str,
                committer: Ident) -> list[str]:
    """Commit the patches onto `base`: through small per-patch indexes when every patch's
    preimage is exactly what the tree holds, else through `apply.materialize`'s full index
    (same commits, slower in a wide tree, and the one that words the errors)."""
    try:
        return _materialize_sparse(repo, plist, base, committer)
    except CarryError:
        from carry import apply

        return apply.materialize(repo, list(plist), base, committer=committer)


def _materialize_sparse(repo: Repo, plist: Sequence[patchmod.Patch], base: str,
                        committer: Ident) -> list[str]:
    parent, tree = base, repo.read_commit(base).tree
    out = []
    for patch in plist:
        before, after = repo.apply_sparse(patch.diff)
        if any(repo.tree_lookup(tree, p) != e for p, e in before.items()) or any(
                repo.tree_lookup(tree, p) is not None for p in after.keys() - before.keys()):
            raise CarryError(f"{patch.file}: its preimage is not the tree's")
        changes: dict[bytes, tuple[bytes, str] | None] = {
            p: None for p in before if p not in after}
        changes.update({p: e for p, e in after.items() if before.get(p) != e})
        tree = (repo.edit_tree(tree, changes) or repo.write_object("tree", b"")) if changes \
            else tree
        parent = repo.write_commit(tree, [parent], patch.message, patch.author, committer,
                                   patch.encoding)
        out.append(parent)
    return out


def _cached(repo: Repo, ref: str, base: str, n: int) -> list[str] | None:
    proc = repo.run("rev-list", "--reverse", "--first-parent", ref, "--not", base, "--",
                    check=False)
    shas = proc.stdout.decode().split()
    if proc.returncode != 0 or len(shas) != n:
        return None
    if repo.read_commit(shas[0]).parents[:1] != (base,):
        return None
    return shas


def load_chain(series: Series, repo: Repo) -> tuple[str, list[Carried]]:
    base = series_base(series, repo)
    return base, chain(repo, [(f.number, f.name, f.read()) for f in series.patches()], base)


# -- the replay ---------------------------------------------------------------------------------


def _steps(carried: Sequence[Carried], drops: dict[int, Drop]) -> list[PatchResult]:
    out = []
    for c in carried:
        step = PatchResult(c.number, c.file, c.patch.subject, c.patch.author.name,
                           source=c.commit.sha)
        drop = drops.get(c.number)
        if drop:
            step.status, step.reason, step.upstream = "dropped", drop.reason, drop.upstream
        out.append(step)
    return out


def _run_steps(repo: Repo, steps: list[PatchResult], head: str, committer: Ident,
               batch: bool = True) -> tuple[str, int | None, list[str]]:
    """Replay every pending step onto `head`; returns the new head, and the index and paths
    of the step that conflicted, if one did."""
    head_tree = repo.read_commit(head).tree
    planned: dict[int, str] = {}
    for i, step in enumerate(steps):
        if step.status != "pending":
            continue
        c = repo.read_commit(step.source)
        if i not in planned and batch:
            planned.update(_batch(repo, steps, i, head_tree))
        if i in planned:
            tree = planned[i]
        elif repo.read_commit(c.parents[0]).tree == head_tree:
            tree = c.tree  # nothing moved under this patch: its own tree is the result
        else:
            merged = repo.replay_tree(c, head_tree)
            if not merged.clean:
                step.status = "conflict"
                return head, i, sorted(set(merged.conflicts))
            tree = merged.tree
        if tree == head_tree:
            step.status, step.reason = "dropped", "empty after replay"
            continue
        head = repo.write_commit(tree, [head], c.message, c.author, committer, c.encoding)
        head_tree = tree
        step.status, step.commit = "applied", head
    return head, None, []


def _batch(repo: Repo, steps: list[PatchResult], start: int, head_tree: str) -> dict[int, str]:
    """The result trees of a run of patches from one three-way merge instead of one each.

    When the patches of a run touch pairwise different paths, each path's merge has the same
    three inputs whether the run is merged patch by patch or at once (its base, upstream's
    version, the patch's version), so one `merge-tree` of the whole run gives every path's
    result, and each patch's tree is upstream's tree with the results of its own and the
    earlier patches' paths put in. Anything that could make the two ways differ gives up:
    overlapping or nested paths, a deletion and an addition in different patches (a rename
    git could pair across patches), a conflict, or a merge result outside the run's paths
    (upstream renames). Then the patches are merged one by one."""
    run: list[tuple[int, RawCommit]] = []
    for j in range(start, len(steps)):
        c = repo.read_commit(steps[j].source)
        if steps[j].status != "pending" or (run and c.parents[:1] != (run[-1][1].sha,)):
            break
        run.append((j, c))
    if len(run) < 2:
        return {}
    first = run[0][1]
    try:
        changes: list[dict[bytes, Any]] = []
        seen: set[bytes] = set()
        deleting: set[int] = set()
        adding: set[int] = set()
        prev = repo.read_commit(first.parents[0]).tree
        for k, (_, c) in enumerate(run):
            ch = repo.tree_changes(prev, c.tree)
            if seen & ch.keys():
                return {}
            seen |= ch.keys()
            deleting |= {k for _, new in ch.values() if new is None}
            adding |= {k for old, _ in ch.values() if old is None}
            changes.append(ch)
            prev = c.tree
        if len(deleting | adding) > 1 and deleting and adding or any(
                p[:i] in seen for p in seen for i in range(len(p)) if p[i:i + 1] == b"/"):
            return {}
        graft = repo.write_commit(head_tree, first.parents[:1], b"carry graft\n", first.author,
                                  first.author)
        merged = repo.merge_tree(graft, run[-1][1].sha)
        if not merged.clean or repo.tree_changes(head_tree, merged.tree).keys() - seen:
            return {}
        out, tree = {}, head_tree
        for (j, _), ch in zip(run, changes, strict=True):
            edits = {p: repo.tree_lookup(merged.tree, p) for p in ch}
            tree = repo.edit_tree(tree, edits) or repo.write_object("tree", b"")
            out[j] = tree
        return out if tree == merged.tree else {}
    except CarryError:
        return {}


def _replay(series: Series, repo: Repo, base: str, carried: Sequence[Carried],
            target: ResolvedTarget, committer: Ident
            ) -> tuple[TargetResult, int | None, list[str], str]:
    """Drop detection and the replay at once; returns the result, where it stopped (if it
    did), the conflicting paths and the head so far.

    The replay starts speculatively, as if nothing were dropped, while detection runs on the
    other core. Most rebases drop nothing and are done when both finish; otherwise the steps
    before the first dropped patch are kept (the same inputs give the same commits) and the
    rest is replayed again."""
    detector = repo.fork()
    try:
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(upstream.find_drops, detector, carried, base, target.sha,
                                 series.manifest.provenance)
            steps = _steps(carried, {})
            head, stop, paths = _run_steps(repo, steps, target.sha, committer)
            drops = future.result()
    finally:
        detector.close()
    first = next((i for i, c in enumerate(carried) if c.number in drops), None)
    if first is not None and (stop is None or first <= stop):
        redo = _steps(carried, drops)
        head = target.sha
        for i in range(first):
            redo[i] = steps[i]
            head = steps[i].commit or head
        steps = redo
        head, stop, paths = _run_steps(repo, steps, head, committer)
    elif stop is not None:  # the stop came before any drop: mark the later drops
        for step, c in zip(steps[stop + 1:], carried[stop + 1:], strict=True):
            if c.number in drops:
                step.status, step.reason = "dropped", drops[c.number].reason
                step.upstream = drops[c.number].upstream
    status = "applied" if stop is None else "conflict"
    result = TargetResult(series.name, target.name, target.ref, target.sha, status,
                          head if stop is None else "", steps)
    return result, stop, paths, head


def replay(series: Series, repo: Repo, onto: str) -> TargetResult:
    """Replay the series onto `onto` and return the outcome, writing no user ref, no state
    and no worktree: for callers (validation) that only need the rebased tree."""
    base, carried = load_chain(series, repo)
    target = ResolvedTarget(onto, onto, repo.rev_parse(onto))
    result, stop, paths, _ = _replay(series, repo, base, carried, target,
                                     repo.committer_ident())
    if stop is not None:
        step = result.patches[stop]
        result.conflict = Conflict(step.file, step.subject, step.author, paths, "")
    return result


# -- state ----------------------------------------------------------------------------------


def _state_dir(repo: Repo, series: str) -> Path:
    return repo.carry_dir() / "rebase" / series


def _state_path(repo: Repo, series: str, slug: str) -> Path:
    return _state_dir(repo, series) / f"{slug}.json"


def _worktree_path(repo: Repo, series: str, slug: str) -> Path:
    """Beside the repository, where a user looks (`../vllm.carry/NAME/TARGET`), not under .git."""
    return repo.path.parent / f"{repo.path.name.removesuffix('.git')}.carry" / series / slug


def _write_state(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _read_state(path: Path) -> dict[str, Any]:
    try:
        state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CarryError(f"cannot read rebase state {path}: {exc}") from None
    if state.get("version") != STATE_VERSION:
        raise CarryError(f"rebase state {path} has version {state.get('version')!r}; this carry "
                         f"reads version {STATE_VERSION}", hint="finish it with the carry that "
                         "started it, or remove the file after checking the refs")
    return state


def in_progress(repo: Repo, series: str) -> list[dict[str, Any]]:
    d = _state_dir(repo, series)
    if not d.is_dir():
        return []
    return [_read_state(p) for p in sorted(d.glob("*.json"))]


def _state(series: Series, result: TargetResult, target: ResolvedTarget, branch: str,
           old: str | None, refresh: bool, phase: str, head: str, position: int,
           worktree: str = "", paths: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "version": STATE_VERSION, "series": series.name, "series_root": str(series.root),
        "target": {"name": target.name, "ref": target.ref, "sha": target.sha},
        "branch": branch, "branch_old": old, "refresh": refresh, "phase": phase,
        "head": head, "position": position, "worktree": worktree, "paths": list(paths),
        "patches": [asdict(p) for p in result.patches],
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


# -- the command ----------------------------------------------------------------------------


def _branch_for(repo: Repo, series: str, target: ResolvedTarget, branch: str | None
                ) -> tuple[str, str | None]:
    ref = branch or f"carry/{series}/{target.slug}"
    ref = ref if ref.startswith("refs/") else f"refs/heads/{ref}"
    if repo.run("check-ref-format", ref, check=False).returncode != 0:
        raise CarryError(f"not a valid branch name: {ref!r}")
    old = repo.try_rev_parse(ref) if repo.ref_exists(ref) else None
    if old:
        from carry.apply import checked_out_at
        from carry.branches import check_ours

        where = checked_out_at(repo, ref)
        if where:
            raise CarryError(f"{ref} is checked out in {where}; carry will not move it under "
                             "a worktree", hint="pass --branch with another name")
        if not branch:
            check_ours(repo, ref, old)
    return ref, old


def run(series: Series, repo: Repo, opts: Options) -> list[TargetResult]:
    if opts.fetch:
        upstream.fetch(series, repo)
    targets = upstream.resolve(series, repo, opts.onto, opts.targets)
    if opts.refresh and len(targets) != 1:
        raise CarryError(f"--refresh writes one new version, but {len(targets)} targets were "
                         "given", hint="pick one with --onto or --target")
    if opts.branch and len(targets) != 1:
        raise CarryError("--branch names one branch, but several targets were given")
    for t in targets:
        if _state_path(repo, series.name, t.slug).exists():
            raise CarryError(f"a rebase of {series.name} onto {t.name} is already in progress "
                             f"in {repo.path}", hint="carry rebase --continue, --skip or --abort")
    branches = {t.slug: _branch_for(repo, series.name, t, opts.branch) for t in targets}
    base, carried = load_chain(series, repo)
    committer = repo.committer_ident()

    def one(t: ResolvedTarget) -> TargetResult:
        r = repo.fork()
        try:
            ref, old = branches[t.slug]
            result, stop, paths, head = _replay(series, r, base, carried, t, committer)
            result.branch, result.dry_run = ref, opts.dry_run
            if opts.dry_run:
                if stop is not None:
                    s = result.patches[stop]
                    result.conflict = Conflict(s.file, s.subject, s.author, paths, "")
                return result
            if stop is None:
                _finish(series, r, result, t, ref, old, opts.refresh)
            else:
                with _WORKTREES:  # worktree add/remove/prune of two targets must not interleave
                    _stop(series, r, result, t, ref, old, opts.refresh, head, stop, paths)
            return result
        except CarryError as exc:
            return TargetResult(series.name, t.name, t.ref, t.sha, "failed", "", [],
                                message=exc.line())
        finally:
            r.close()

    workers = max(1, min(len(targets), os.cpu_count() or 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(one, targets))
    for res, t in zip(results, targets, strict=True):
        if opts.refresh and res.status == "applied" and not opts.dry_run:
            res.refreshed = refresh(series, repo, res, t)
    return results


def _finish(series: Series, repo: Repo, result: TargetResult, target: ResolvedTarget, ref: str,
            old: str | None, refresh_: bool) -> None:
    """The one ref update, bracketed by a `finishing` state so that a kill -9 between the two
    leaves `--abort` enough to put the ref back."""
    path = _state_path(repo, series.name, target.slug)
    _write_state(path, _state(series, result, target, ref, old, refresh_, "finishing",
                              result.head, len(result.patches)))
    try:
        repo.set_ref(ref, result.head, old, message=f"carry rebase {series.name} onto "
                     f"{target.name} {target.sha}")
    except GitError as exc:
        path.unlink(missing_ok=True)
        result.status, result.head = "failed", ""
        result.message = f"{ref} moved while carry worked; nothing was written ({exc})"
        return
    result.updated = True
    path.unlink(missing_ok=True)


def _stop(series: Series, repo: Repo, result: TargetResult, target: ResolvedTarget, ref: str,
          old: str | None, refresh_: bool, head: str, stop: int, paths: list[str]) -> None:
    """Save the state first, then build the conflict worktree it names: a kill between the two
    leaves a state whose `--abort` removes whatever part of the worktree exists."""
    step = result.patches[stop]
    wt = _worktree_path(repo, series.name, target.slug)
    state = _state(series, result, target, ref, old, refresh_, "conflict", head, stop,
                   str(wt), paths)
    path = _state_path(repo, series.name, target.slug)
    _write_state(path, state)
    _remove_worktree(repo, wt, tidy=False)
    wt.parent.mkdir(parents=True, exist_ok=True)
    conflicted = repo.worktree_add(wt, head).cherry_pick_no_commit(step.source)
    state["paths"] = conflicted or paths
    _write_state(path, state)
    from carry.squash import hints

    result.conflict = Conflict(step.file, step.subject, step.author, state["paths"], str(wt),
                               hints(repo, series.manifest.base.commit, target.sha, step.file,
                                     step.subject, state["paths"], series.manifest.upstream.repo))


_WORKTREES = threading.Lock()


def _remove_worktree(repo: Repo, wt: Path, tidy: bool = True) -> None:
    """`tidy` also removes the emptied NAME/ and REPO.carry/ folders; a stop must not, since
    other targets of the same run are making their worktrees there at the same time."""
    if wt.exists() or (repo.common_dir / "worktrees").exists():
        repo.worktree_remove(wt)
    shutil.rmtree(wt, ignore_errors=True)
    repo.run("worktree", "prune", check=False)
    for empty in (wt.parent, wt.parent.parent) if tidy else ():
        with contextlib.suppress(OSError):
            empty.rmdir()


# -- continue, skip, abort --------------------------------------------------------------------


@dataclass
class Aborted:
    series: str
    target: str
    branch: str
    restored: bool
    worktree: str


def _pick(repo: Repo, series: Series, which: Sequence[str]) -> list[dict[str, Any]]:
    states = in_progress(repo, series.name)
    if not states:
        raise CarryError(f"no carry rebase of {series.name} is in progress in {repo.path}")
    if which:
        chosen = [s for s in states
                  if s["target"]["name"] in which or s["target"]["ref"] in which
                  or ResolvedTarget(s["target"]["name"], "", "").slug in which]
        if not chosen:
            known = ", ".join(s["target"]["name"] for s in states)
            raise CarryError(f"no rebase of {series.name} onto {', '.join(which)} is in "
                             f"progress (in progress: {known})")
        return chosen
    return states


def abort(series: Series, repo: Repo, which: Sequence[str] = ()) -> list[Aborted]:
    """Put back what the rebase changed: the conflict worktree goes, and a ref that the final
    update already moved returns to its old value. Safe to repeat after any kill."""
    out = []
    for state in _pick(repo, series, which):
        t = state["target"]
        slug = ResolvedTarget(t["name"], "", "").slug
        wt = Path(state["worktree"]) if state["worktree"] else None
        if wt is not None:
            _remove_worktree(repo, wt)
        restored = False
        if state["phase"] == "finishing":
            ref, old = state["branch"], state["branch_old"]
            now = repo.try_rev_parse(ref) if repo.ref_exists(ref) else None
            if now == state["head"] and now != old:
                repo.set_ref(ref, old, now, message=f"carry rebase --abort {series.name}")
                restored = True
        _state_path(repo, series.name, slug).unlink(missing_ok=True)
        out.append(Aborted(series.name, t["name"], state["branch"], restored,
                           str(wt) if wt else ""))
    return out


def resume(series: Series, repo: Repo, action: str,
           which: Sequence[str] = ()) -> list[TargetResult]:
    """`--continue` or `--skip` on the stopped target(s)."""
    states = _pick(repo, series, which)
    if len(states) > 1:
        names = ", ".join(s["target"]["name"] for s in states)
        raise CarryError(f"several rebases of {series.name} are in progress ({names})",
                         hint="name one with --target or --onto")
    state = states[0]
    t = ResolvedTarget(state["target"]["name"], state["target"]["ref"], state["target"]["sha"])
    steps = [PatchResult(**p) for p in state["patches"]]
    result = TargetResult(series.name, t.name, t.ref, t.sha, "conflict", "", steps,
                          branch=state["branch"])
    committer = repo.committer_ident()
    head, pos = state["head"], state["position"]
    path = _state_path(repo, series.name, t.slug)
    if state["phase"] == "conflict":
        step = steps[pos]
        wt = Path(state["worktree"])
        if action == "skip":
            step.status, step.reason = "skipped", "left out with --skip"
        else:
            head = _take_resolution(repo, wt, step, head, state["paths"], committer)
        state.update(phase="replaying", head=head,
                     patches=[asdict(p) for p in steps])
        _write_state(path, state)
        _remove_worktree(repo, wt)
    elif action == "skip" and state["phase"] != "conflict":
        raise CarryError(f"the rebase onto {t.name} is not stopped at a conflict; nothing to "
                         "skip", hint="carry rebase --continue")
    if state["phase"] in ("conflict", "replaying"):
        head, stop, paths = _run_steps(repo, steps, head, committer)
        if stop is not None:
            _stop(series, repo, result, t, state["branch"], state["branch_old"],
                  state["refresh"], head, stop, paths)
            return [result]
        result.status, result.head = "applied", head
        _finish(series, repo, result, t, state["branch"], state["branch_old"], state["refresh"])
    else:  # finishing: the ref update may or may not have happened before a kill
        result.status, result.head = "applied", state["head"]
        now = repo.try_rev_parse(state["branch"]) if repo.ref_exists(state["branch"]) else None
        if now != state["head"]:
            _finish(series, repo, result, t, state["branch"], state["branch_old"],
                    state["refresh"])
        else:
            result.updated = True
            path.unlink(missing_ok=True)
    if result.status == "applied" and state["refresh"]:
        result.refreshed = refresh(series, repo, result, t)
    return [result]


def _take_resolution(repo: Repo, wt: Path, step: PatchResult, head: str, paths: Sequence[str],
                     committer: Ident) -> str:
    if not wt.is_dir():
        raise CarryError(f"the conflict worktree {wt} is gone", hint="carry rebase --abort")
    work = Repo(wt.resolve())
    try:
        tree = work.stage_tracked()
        source = repo.read_commit(step.source)
        for p in paths:
            data = (wt / p).read_bytes() if (wt / p).is_file() else b""
            known = max(len(_MARKER.findall(repo.show_file(rev, p) or b""))
                        for rev in (head, step.source))
            if len(_MARKER.findall(data)) > known:
                raise CarryError(f"{p} still has conflict markers in {wt}",
                                 hint="resolve them, or carry rebase --skip")
    finally:
        work.close()
    if tree == repo.read_commit(head).tree:
        step.status, step.reason = "dropped", "empty after the conflict was resolved"
        return head
    new = repo.write_commit(tree, [head], source.message, source.author, committer,
                            source.encoding)
    step.status, step.reason, step.commit = "applied", "conflict resolved", new
    return new


# -- refresh ------------------------------------------------------------------------------------


def refresh(series: Series, repo: Repo, result: TargetResult,
            target: ResolvedTarget) -> dict[str, Any]:
    """Write the rebased series as the next version: each kept patch regenerated from its new
    commit under its old file name (numbers are identities), dropped ones gone."""
    from carry import series as seriesmod
    from carry import versions

    with contextlib.suppress(CarryError):
        versions.tag(series)  # keep the old version reachable for range-diff
    formatted: dict[str, bytes] = {}
    if result.head != result.onto:
        formatted = dict(repo.format_patch(result.onto, result.head))
    files: dict[str, bytes] = {}
    for step in result.patches:
        if step.status == "applied":
            files[step.file] = patchmod.render(repo.read_commit(step.commit),
                                               formatted[step.commit])
    m = series.manifest
    m.base = seriesmod.Base(ref=target.ref, commit=result.onto)
    m.version += 1
    m.changelog.append(seriesmod.ChangelogEntry(
        m.version, dt.datetime.now(dt.UTC).date().isoformat(), changelog_line(result)))
    seriesmod.write_series(series.root, m, files)
    fresh = seriesmod.load(series.root)
    return {"version": m.version, "tag": versions.tag(fresh) or "", "files": sorted(files)}


def changelog_line(result: TargetResult) -> str:
    parts = [f"rebased onto {result.target} {result.onto[:12]}: "
             f"{result.count('applied')} applied"]
    drops = [f"{p.file[:4]} ({p.reason})" for p in result.patches if p.status == "dropped"]
    if drops:
        parts.append("dropped " + ", ".join(drops))
    resolved = [p.file[:4] for p in result.patches if p.reason == "conflict resolved"]
    if resolved:
        parts.append("conflicts resolved in " + ", ".join(resolved))
    skipped = [p.file[:4] for p in result.patches if p.status == "skipped"]
    if skipped:
        parts.append("skipped " + ", ".join(skipped))
    return "; ".join(parts)


def command(series: Series, repo: Repo, opts: Options, continue_: bool = False,
            skip: bool = False, abort_: bool = False) -> list[TargetResult] | list[Aborted]:
    """The `carry rebase` entry point: a new rebase, or one of the three ways to resume."""
    actions = [n for n, on in (("--continue", continue_), ("--skip", skip), ("--abort", abort_))
               if on]
    if len(actions) > 1:
        raise CarryError(f"give at most one of {', '.join(actions)}")
    if not actions:
        return run(series, repo, opts)
    extra = [n for n, on in (("--branch", opts.branch), ("--refresh", opts.refresh),
                             ("--fetch", opts.fetch), ("--dry-run", opts.dry_run)) if on]
    if extra:
        raise CarryError(f"{actions[0]} resumes the saved rebase; {', '.join(extra)} cannot "
                         "change it now")
    which = [*opts.onto, *opts.targets]
    if abort_:
        return abort(series, repo, which)
    return resume(series, repo, "skip" if skip else "continue", which)


def exit_code(results: Sequence[TargetResult] | Sequence[Aborted]) -> int:
    return 0 if all(isinstance(r, Aborted) or r.status == "applied" for r in results) else 1
