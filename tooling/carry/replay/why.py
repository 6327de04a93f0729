"""Why a patch conflicts: the first upstream commit after which it stops applying, or the
earlier patch it builds on that was left out.

A maintainer shown nineteen conflicts usually has two to resolve: the rest change lines that
one of those two introduced. So each conflicting patch P is first tested against the earlier
patches left out (skipped, stopped or forecast to conflict) whose paths it shares, nearest
first: each is taken out of P's parent in memory, and when P no longer applies there, P
builds on it. A patch that builds on none is a root conflict, and its cause is found by
bisecting the target's first-parent line from the series base's merge-base, at the paths P
conflicts on at the target (the conflict shown; all of P's where those are unknown or not
P's own): at a commit U, the series prefix (at those paths, as P found them) is carried
onto U by one merge from the series base, and P conflicts at U when its merge onto that
result is not clean (a prefix that conflicts at U is taken with its markers: only P's own
hunks decide). Only the commits that change those paths can change that answer, so about
log2 of their number probes of two small merges each, no worktree, and only for the
conflicting patches. A non-monotone line
still gives a real transition: a commit where P applies on its parent and not on it. The
merges themselves are `whyprobe`'s: all the conflicts' next merges are decided together,
in one `merge-tree` a round.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Collection, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from typing import Any

from carry.base.errors import CarryError
from carry.git import Content, RawCommit, Repo
from carry.replay import whyprobe
from carry.replay.causes import CONFLICTING, valid_cause
from carry.replay.runs import PatchResult

LEFT_OUT = ("conflict", "skipped", "would-conflict")
# ASCII digits, at most 10: `(#٥)` is no PR and `(#<5,000 digits>)` no int()
_PR = re.compile(r"\(#([0-9]{1,10})\)\s*$|^Merge pull request #([0-9]{1,10})(?![0-9])")
_Known = tuple[dict[str, Any] | None, str, str]  # the cause, the file it builds on, the look


def annotate(repo: Repo, steps: list[PatchResult], onto: str,
             paths: dict[int, Sequence[str]] | None = None) -> None:
    """Set `builds_on` or `cause` on every conflicting step of a replay onto `onto`; `paths`,
    where each conflicts (a `would-conflict` step's `forecast` else)."""
    why = Why(repo, steps, onto, background=False)
    for i, step in enumerate(steps):
        why.add(i, (paths or {}).get(i) or step.forecast)
    why.finish()


class Why:
    """The whys of one replay's conflicts. The forecast `add`s each conflict as it finds it
    (every earlier patch's status is final by then); with `background` the work runs on a
    thread of its own, with its own handle on the repository, so that git merges while the
    forecast replays on; `finish` waits and sets the fields, `close` always ends the thread.
    The conflicts added and not yet worked out are worked out together (`whyprobe`): all
    of them at `finish` in the foreground, those waiting when the thread gets to them in
    the background, where one added while others are under way joins their next round.
    A patch asked before, with the same patches left out, comes from `.git/carry/why/`."""

    def __init__(self, repo: Repo, steps: list[PatchResult], onto: str,
                 background: bool = True) -> None:
        self._steps, self._onto = steps, onto
        self._repo = repo.fork() if background else repo
        self._own = background
        self._pool = ThreadPoolExecutor(1) if background else None
        self._waiting: list[tuple[int, str, list[tuple[str, str]], list[str], set[bytes]]] = []
        self._lock = threading.Lock()
        self._done: dict[int, _Known] = {}
        self._runs: list[Future[None]] = []
        self._merged: dict[Content, bool] = {}  # each content merge's answer (`together`)
        self._changes: dict[str, dict[bytes, Any]] | None = None
        self._line_: whyprobe.Line | None = None

    def add(self, i: int, paths: Sequence[str] = ()) -> None:
        """Work out the why of step `i`, which conflicts at `paths` (unknown: none given)."""
        step = self._steps[i]
        if step.status not in CONFLICTING or not step.source:
            return
        earlier = [(s.source, s.file) for s in reversed(self._steps[:i])
                   if s.status in LEFT_OUT and s.source]
        sources = [s.source for s in self._steps if s.source]
        at = {p.encode("utf-8", "surrogateescape") for p in paths}
        with self._lock:
            self._waiting.append((i, step.source, earlier, sources, at))
        if self._pool is not None:
            self._runs.append(self._pool.submit(self._work))

    def finish(self) -> None:
        for run in self._runs:
            run.result()
        self._work()
        for i, known in self._done.items():
            self._steps[i].cause, self._steps[i].builds_on, self._steps[i].look = known
        self._runs, self._done = [], {}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._own:
            self._repo.close()

    def _work(self) -> None:
        """Every conflict waiting, worked out together, and those added meanwhile with them."""
        with self._lock:
            jobs, self._waiting = self._waiting, []
        if not jobs:
            return
        if self._changes is None:
            self._changes = self._repo.commit_changes(jobs[0][3])
            self._repo.prime_attributes({p for c in self._changes.values() for p in c})

        def joining() -> list[whyprobe.Plan]:
            with self._lock:
                more, self._waiting = self._waiting, []
            jobs.extend(more)
            return [self._one(*job[1:]) for job in more]

        found = whyprobe.together(self._repo, [self._one(*job[1:]) for job in jobs],
                                  self._merged, joining)
        self._done.update(zip((job[0] for job in jobs), found, strict=True))

    def _one(self, source: str, earlier: list[tuple[str, str]], sources: list[str],
             at: set[bytes]) -> Generator[whyprobe.Asks, list[bool | None], _Known]:
        repo = self._repo
        assert self._changes is not None  # `_work`'s
        p = repo.read_commit(source)
        paths = set(self._changes.get(p.sha, {}))
        shared = [(src, file, paths & self._changes.get(src, {}).keys())
                  for src, file in earlier]
        shared = [x for x in shared if x[2]]
        left_out = [src for src, _, _ in shared]
        # A root's cause is bisected at the paths P conflicts on at the target, its own (not
        # a rename's), when known: what upstream did to the rest of P does not explain the
        # conflict shown, and merging those files at every probe cost most of the search.
        probed = at if at and at <= paths else paths
        # what P builds on does not depend on the target; a root's cause does
        built = _key("", p.sha, left_out)
        rooted = _key(self._onto, p.sha, left_out, probed if probed != paths else set())
        known = _recall(repo, built)
        if known is not None and not known["builds_on"]:
            known = _recall(repo, rooted)
        if known is None:
            known = {"builds_on": "", "cause": None}
            try:
                context, on = yield from whyprobe.context(repo, p, paths, shared)
                if on is not None:
                    known["builds_on"] = on
                else:
                    line = self._line(sources)
                    known["cause"] = yield from whyprobe.bisect(repo, p, context, probed,
                                                                line, _cause)
                    if known["cause"] is None:
                        known["look"] = whyprobe.look(line, probed)
                    _remember(repo, rooted, known)
                _remember(repo, built, {"builds_on": known["builds_on"], "cause": None})
            except CarryError:  # a shape the in-memory merges cannot take: no why
                pass
        on_file = next((file for src, file, _ in shared if src == known["builds_on"]), "")
        return known["cause"], on_file, str(known.get("look", ""))

    def _line(self, sources: list[str]) -> whyprobe.Line:
        """The target's line, read once for every root: the commits that change any path of
        the series (each root then keeps those that change its own)."""
        if self._line_ is None:  # the series base is the parent of the chain's first patch
            assert self._changes is not None  # `_work`'s
            base = self._repo.read_commit(sources[0]).parents[0]
            mb = self._repo.merge_base(base, self._onto) or ""
            paths = {p for c in self._changes.values() for p in c}
            self._line_ = whyprobe.Line.of(self._repo, base, mb, self._onto, paths)
        return self._line_


def _cause(c: RawCommit) -> dict[str, Any]:
    return {"sha": c.sha, "subject": c.subject, "pr": pr_number(c.subject)}


def _key(onto: str, patch: str, left_out: list[str], at: Collection[bytes] = ()) -> str:
    """What a patch's why depends on: the patch (its chain, so its base and every patch
    before it), the earlier patches left out that share its paths, and for a root's cause
    the target and the paths it is bisected at (none: all of the patch's)."""
    paths = [p.decode("utf-8", "surrogateescape") for p in sorted(at)]
    return hashlib.sha256("\0".join(["carry-why-2", onto, patch, *left_out, "", *paths]
                                     ).encode("utf-8", "surrogateescape")).hexdigest()[:40]


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


def pr_number(subject: str) -> int | None:
    """The PR a squash-merged (`... (#N)`) or merged (`Merge pull request #N`) commit came
    from."""
    m = _PR.search(subject)
    return int(m.group(1) or m.group(2)) if m else None
