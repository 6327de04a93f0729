"""Why a patch conflicts: the first upstream commit after which it stops applying, or the
earlier patch it builds on that was left out.

A maintainer shown nineteen conflicts usually has two to resolve: the rest change lines that
one of those two introduced. So each conflicting patch P is first tested against the earlier
patches left out (skipped, stopped or forecast to conflict) whose paths it shares, nearest
first: each is taken out of P's parent in memory, and when P no longer applies there, P
builds on it. A patch that builds on none is a root conflict, and its cause is found by
bisecting the target's first-parent line from the series base's merge-base: at a commit U,
the series prefix (P's own paths, as P found them) is carried onto U by one merge from the
series base, and P conflicts at U when its merge onto that result is not clean (a prefix
that conflicts at U is taken with its markers: only P's own hunks decide). Only the commits
that change P's paths can change that answer, so about log2 of their number probes of two
small `merge-tree`s each, no worktree, and only for the conflicting patches. A non-monotone
line still gives a real transition: a commit where P applies on its parent and not on it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from carry.base.errors import CarryError
from carry.git import GRAFT_IDENT, Entry, RawCommit, Repo
from carry.replay.runs import PatchResult

CONFLICTING = ("conflict", "would-conflict")
LEFT_OUT = ("conflict", "skipped", "would-conflict")
# ASCII digits, at most 10: `(#٥)` is no PR and `(#<5,000 digits>)` no int()
_PR = re.compile(r"\(#([0-9]{1,10})\)\s*$|^Merge pull request #([0-9]{1,10})(?![0-9])")
_SHA = re.compile(r"^[0-9a-f]{40}$")
_Known = tuple[dict[str, Any] | None, str, str]  # the cause, the file it builds on, the look


def annotate(repo: Repo, steps: list[PatchResult], onto: str) -> None:
    """Set `builds_on` or `cause` on every conflicting step of a replay onto `onto`."""
    why = Why(repo, steps, onto, background=False)
    for i in range(len(steps)):
        why.add(i)
    why.finish()


class Why:
    """The whys of one replay's conflicts. The forecast `add`s each conflict as it finds it
    (every earlier patch's status is final by then); with `background` the work runs on a
    thread of its own, with its own handle on the repository, so that git merges while the
    forecast replays on; `finish` waits and sets the fields, `close` always ends the thread.
    A patch asked before, with the same patches left out, comes from `.git/carry/why/`."""

    def __init__(self, repo: Repo, steps: list[PatchResult], onto: str,
                 background: bool = True) -> None:
        self._steps, self._onto = steps, onto
        self._repo = repo.fork() if background else repo
        self._own = background
        self._pool = ThreadPoolExecutor(1) if background else None
        self._jobs: list[tuple[int, Future[_Known] | _Known]] = []
        self._changes: dict[str, dict[bytes, Any]] | None = None
        self._base = ""  # the series base
        self._mb: str | None = None  # its merge-base with `onto`

    def add(self, i: int) -> None:
        step = self._steps[i]
        if step.status not in CONFLICTING or not step.source:
            return
        earlier = [(s.source, s.file) for s in reversed(self._steps[:i])
                   if s.status in LEFT_OUT and s.source]
        sources = [s.source for s in self._steps if s.source]
        if self._pool is not None:
            self._jobs.append((i, self._pool.submit(self._one, step.source, earlier, sources)))
        else:
            self._jobs.append((i, self._one(step.source, earlier, sources)))

    def finish(self) -> None:
        for i, job in self._jobs:
            known = job.result() if isinstance(job, Future) else job
            self._steps[i].cause, self._steps[i].builds_on, self._steps[i].look = known
        self._jobs = []

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._own:
            self._repo.close()

    def _one(self, source: str, earlier: list[tuple[str, str]], sources: list[str]
             ) -> _Known:
        repo = self._repo
        if self._changes is None:
            self._changes = repo.commit_changes(sources)
        p = repo.read_commit(source)
        paths = set(self._changes.get(p.sha, {}))
        shared = [(src, file, paths & self._changes.get(src, {}).keys())
                  for src, file in earlier]
        shared = [x for x in shared if x[2]]
        left_out = [src for src, _, _ in shared]
        # what P builds on does not depend on the target; a root's cause does
        built, rooted = _key("", p.sha, left_out), _key(self._onto, p.sha, left_out)
        known = _recall(repo, built)
        if known is not None and not known["builds_on"]:
            known = _recall(repo, rooted)
        if known is None:
            known = {"builds_on": "", "cause": None}
            try:
                context, on = _context(repo, p, paths, shared)
                if on is not None:
                    known["builds_on"] = on
                else:
                    line = self._line(sources, paths)
                    known["cause"] = _bisect(repo, p, context, paths, line)
                    if known["cause"] is None:
                        known["look"] = _look(line, paths)
                    _remember(repo, rooted, known)
                _remember(repo, built, {"builds_on": known["builds_on"], "cause": None})
            except CarryError:  # a shape the in-memory merges cannot take: no why
                pass
        on_file = next((file for src, file, _ in shared if src == known["builds_on"]), "")
        return known["cause"], on_file, str(known.get("look", ""))

    def _line(self, sources: list[str], paths: set[bytes]) -> _Line:
        if self._mb is None:  # the series base is the parent of the chain's first patch
            self._base = self._repo.read_commit(sources[0]).parents[0]
            self._mb = self._repo.merge_base(self._base, self._onto) or ""
        return _Line.of(self._repo, self._base, self._mb, self._onto, paths)


def _key(onto: str, patch: str, left_out: list[str]) -> str:
    """What a patch's why depends on: the patch (its chain, so its base and every patch
    before it), the earlier patches left out that share its paths, and for a root's cause
    the target."""
    return hashlib.sha256("\0".join(["carry-why-2", onto, patch, *left_out]).encode()
                          ).hexdigest()[:40]


def _recall(repo: Repo, key: str) -> dict[str, Any] | None:
    """A why worked out before (`.git/carry/why/`): a rerun, a resume or another CI cell on
    the same target asks the same question. A damaged entry is worked out again."""
    try:
        digest, _, raw = (repo.carry_dir() / "why" / key).read_bytes().partition(b"\n")
        if hashlib.sha256(raw).hexdigest().encode() != digest:
            return None
        known = json.loads(raw)
    except (OSError, ValueError):
        return None
    ok = isinstance(known, dict) and isinstance(known.get("builds_on"), str) and (
        valid_cause(known.get("cause"))) and isinstance(known.get("look", ""), str)
    return known if ok else None


def valid_cause(cause: Any) -> bool:
    """None, or the commit, subject and PR number `_bisect` gives: a cause read back from a
    file (a saved rebase, the cache) is printed, so it is checked first."""
    return cause is None or (
        isinstance(cause, dict) and set(cause) == {"sha", "subject", "pr"}
        and isinstance(cause["sha"], str) and bool(_SHA.match(cause["sha"]))
        and isinstance(cause["subject"], str)
        and (cause["pr"] is None or type(cause["pr"]) is int))


def _remember(repo: Repo, key: str, known: dict[str, Any]) -> None:
    """Kept without a sync (a lost entry costs a recomputation), the newest 512."""
    raw = json.dumps(known, sort_keys=True).encode()
    folder = repo.carry_dir() / "why"
    with suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{key}.{os.getpid()}"
        tmp.write_bytes(hashlib.sha256(raw).hexdigest().encode() + b"\n" + raw)
        os.replace(tmp, folder / key)
        entries = [e for e in folder.iterdir() if not e.name.startswith(".")]
        if len(entries) > 512:
            for old in sorted(entries, key=lambda e: e.stat().st_mtime)[:-512]:
                old.unlink()


def _context(repo: Repo, p: RawCommit, paths: set[bytes],
             earlier: list[tuple[str, str, set[bytes]]]) -> tuple[str, str | None]:
    """P's parent tree with the left-out patches taken out one by one (at P's paths),
    nearest first, and the first of them without which P no longer applies (None: P builds
    on none). Each tree is known before P is merged onto any of them, so P's merges are
    asked at once (`clean_merges`), up to a tree only git's merge can make."""
    tree = repo.read_commit(p.parents[0]).tree
    tries: list[tuple[str, str, str]] = []  # (patch taken out, tree before, tree after)
    for source, _, shared in earlier:
        commit = repo.read_commit(source)
        try:
            undone = repo.unapply_trivially(commit, tree, shared)
        except CarryError:  # asked in turn, the tries before it were merged first
            undone = None
        if undone is None:
            on = _first_on(repo, p, paths, tries)
            if on is not None:
                return on
            tries = []
            undone = repo.unapply_tree(commit, tree, shared)
        if undone.clean:  # else a later applied patch changed its lines: cannot tell
            tries.append((source, tree, undone.tree))
            tree = undone.tree
    return _first_on(repo, p, paths, tries) or (tree, None)


def _first_on(repo: Repo, p: RawCommit, paths: set[bytes], tries: list[tuple[str, str, str]]
              ) -> tuple[str, str] | None:
    """The first of `tries` (a patch taken out and the trees before and after) after which
    P no longer applies, with the tree before it."""
    asks = [(after, p.parents[0], p.sha, paths) for _, _, after in tries]
    for (source, before, after), clean in zip(tries, repo.clean_merges(asks), strict=True):
        if clean is None:
            clean = repo.merge_onto(after, p.parents[0], p.sha, paths).clean
        if not clean:
            return before, source
    return None


@dataclass
class _Line:
    """The target's first-parent line from the merge-base `mb` of the series base with it:
    every commit of it (oldest first, read only when needed), and those that change a
    patch's paths, with which."""

    repo: Repo
    base: str
    mb: str
    onto: str
    touching: list[tuple[str, set[bytes]]]
    _all: list[str] | None = None

    @classmethod
    def of(cls, repo: Repo, base: str, mb: str, onto: str, paths: set[bytes]) -> _Line:
        return cls(repo, base, mb, onto, repo.first_parent_changes(mb, onto, paths) if mb else [])

    def every(self) -> list[str]:
        if self._all is None:
            self._all = self.repo.first_parent_chain(self.onto, self.mb) or []
        return self._all


def _bisect(repo: Repo, p: RawCommit, context: str, paths: set[bytes],
            line: _Line) -> dict[str, Any] | None:
    """The first commit of the line at which P conflicts (the probe below), when P
    conflicts at the target and not at the line's start; else None.

    P's merge depends only on what a commit holds at P's paths, so the probes look at those
    paths alone (small merges) and at the commits that change them. When upstream has taken
    one of them away (a rename git may follow), whole trees are merged at every commit of
    the line instead, as the replay did."""
    if not line.mb:
        return None
    base = line.base
    base_tree = repo.read_commit(base).tree
    onto_tree = repo.read_commit(line.onto).tree
    moved = any(repo.tree_lookup(onto_tree, path) is None
                and repo.tree_lookup(context, path) is not None for path in paths)

    def at(tree: str) -> str:
        edits: dict[bytes, Entry | None] = {path: repo.tree_lookup(tree, path) for path in paths}
        return repo.edit_tree(base_tree, edits) or repo.write_object("tree", b"")

    prefix = repo.write_commit(at(context), [base], b"carry prefix\n", GRAFT_IDENT,
                               GRAFT_IDENT)
    seen: dict[str, bool] = {}

    def conflicts(u: str) -> bool:
        # The prefix may itself conflict at U where P does not (an earlier patch a maintainer
        # resolved by hand): its tree, markers and all, is still what P's hunks meet.
        ours = repo.read_commit(u).tree if moved else at(repo.read_commit(u).tree)
        if ours not in seen:
            carried = repo.merge_onto(ours, base, prefix, paths)
            seen[ours] = not repo.merge_onto(carried.tree, p.parents[0], p.sha, paths).clean
        return seen[ours]

    probes = [line.mb, *(line.every() if moved else
                         [c for c, changed in line.touching if changed & paths])]
    if not moved:  # a tree memory cannot make is left to the probe that needs it
        trees = []
        for u in probes:
            with suppress(CarryError):
                trees.append(at(repo.read_commit(u).tree))
        _foresee(repo, p, paths, seen, trees, base, prefix)
    good, bad = 0, len(probes) - 1
    if bad == 0 or not conflicts(probes[bad]) or (line.mb != base and conflicts(line.mb)):
        return None
    while bad - good > 1:
        mid = (good + bad) // 2
        if conflicts(probes[mid]):
            bad = mid
        else:
            good = mid
    c = repo.read_commit(probes[bad])
    return {"sha": c.sha, "subject": c.subject, "pr": pr_number(c.subject)}


def _foresee(repo: Repo, p: RawCommit, paths: set[bytes], seen: dict[str, bool],
             trees: list[str], base: str, prefix: str) -> None:
    """Whether P conflicts at each of `trees` (a probe's tree at P's paths), all asked at
    once (`clean_merges`), into `seen`: where the prefix is carried onto a tree in memory
    and `clean_merges` can tell. The bisection then probes the rest as before."""
    carried = {ours: repo.trivial_merge(ours, base, prefix, paths) for ours in trees}
    known = [(ours, c.tree) for ours, c in carried.items() if c is not None]
    asks = [(tree, p.parents[0], p.sha, paths) for _, tree in known]
    seen.update((ours, not clean) for (ours, _), clean in
                zip(known, repo.clean_merges(asks), strict=True) if clean is not None)


def _look(line: _Line, paths: set[bytes]) -> str:
    """The command that lists the target's commits which change the patch's files since the
    series base: where a maintainer looks when no single commit explains a conflict."""
    if not line.mb:
        return ""
    files = sorted(p.decode("utf-8", "surrogateescape") for p in paths)
    return shlex.join(["git", "log", "--oneline", "--first-parent",
                       f"{line.mb[:12]}..{line.onto[:12]}", "--", *files])


def pr_number(subject: str) -> int | None:
    """The PR a squash-merged (`... (#N)`) or merged (`Merge pull request #N`) commit came
    from."""
    m = _PR.search(subject)
    return int(m.group(1) or m.group(2)) if m else None


def explain(steps: Sequence[PatchResult], line: str = "") -> list[dict[str, Any]]:
    """One entry per conflicting patch, root conflicts first (series order within each), with
    the one line a person reads. `line`: the target's name when it is not upstream's line (a
    fork branch), so that its commits are not called upstream's."""
    status = {s.file: s.status for s in steps}
    out = [{"file": s.file, "status": s.status, "cause": s.cause, "builds_on": s.builds_on,
            "look": s.look, "line": line, "text": describe(s, status.get(s.builds_on, ""), line)}
           for s in steps if s.status in CONFLICTING]
    return sorted(out, key=lambda e: bool(e["builds_on"]))


def describe(step: PatchResult, on_status: str = "", line: str = "") -> str:
    """"0007 conflicts since upstream abc123 'Rename foo (#12)'" ("since fork-dev commit
    abc123 ..." when the target, `line`, is a fork branch), "0009 builds on 0007, which was
    skipped"."""
    num = _num(step.file)
    verb = "conflicts" if step.status == "conflict" else "would conflict"
    if step.builds_on:
        which = {"skipped": "was skipped", "conflict": "conflicts",
                 "would-conflict": "would conflict too"}.get(on_status, "was left out")
        return f"{num} builds on {_num(step.builds_on)}, which {which}"
    c = step.cause
    where = f"{line} commit" if line else "upstream"
    if c:
        return f"{num} {verb} since {where} {str(c.get('sha', ''))[:12]} '{c.get('subject')}'"
    text = f"{num} {verb}; no single {line or 'upstream'} commit explains it"
    if step.look:
        return f"{text}: read the commits that change its files, {step.look}"
    return f"{text}: compare its files between the series base and the target"


def _num(file: str) -> str:
    return file.split("-", 1)[0]
