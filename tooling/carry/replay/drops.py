"""What a target already contains: the carried patches that upstream has absorbed, each with
the reason, decided before any replay.

Drop detection never runs a git process per upstream commit. Patch-ids are compared by git's
own `rev-list --cherry-mark` over the whole range (the same header-only-first search as
`git cherry`, split over the cores when the range is long); trailers and PR numbers come from
one `git log --fixed-strings --grep` over the same range, run at the same time. Only the few
commits those mark are read again.

A path-limited `git log -p -- <paths>` looks cheaper but is not: in a wide tree, matching
every tree entry against every pathspec costs more than git's plain tree diff.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from carry.base import untrusted
from carry.base.atomic import write_json
from carry.base.errors import CarryError
from carry.git import RawCommit, Repo
from carry.replay.chain import Carried
from carry.series import trailers as trailermod
from carry.series.store import Provenance

# Provenance roles whose `patches` say "this PR holds the same change as these patches".
EQUIVALENT_ROLES = ("upstream-equivalent", "consolidated")


@dataclass(frozen=True)
class Drop:
    reason: str
    upstream: str = ""


def find_drops(repo: Repo, carried: Sequence[Carried], base: str, target: str,
               provenance: Sequence[Provenance] = (), upstream_repo: str = "",
               remember: bool = True) -> dict[int, Drop]:
    """The patches the target already has, each with its reason, decided before any replay.

    The patch-id search (git's own, over the whole range) and the message search run at the
    same time; only the few commits they mark are read any further. A `(#N)` or a "Merge
    pull request #N" upstream names a PR of `upstream_repo`, so provenance for another
    repository's PR #N never matches it that way (a recorded `merged_as` still does).
    """
    if not carried:
        return {}
    provenance = [p for p in provenance if p.role not in EQUIVALENT_ROLES or p.merged_as
                  or _in_repo(p.pr, upstream_repo)]
    needles = _needles(carried, provenance)
    marked, hits = _search(repo, carried[-1].commit.sha, base, target, needles, remember)
    drops: dict[int, Drop] = {}
    _by_patch_id(repo, carried, marked, drops)
    _by_message(repo, carried, [repo.read_commit(sha) for sha in hits], provenance, drops)
    _by_reachability(repo, carried, base, target, provenance, drops)
    return drops


def _search(repo: Repo, head: str, base: str, target: str, needles: list[str],
            remember: bool) -> tuple[set[str], list[str]]:
    """The patch-id marks and the message hits over `target ^base` (merge-base..target less
    what base has: every merge base of the two is an ancestor of base), both searches at once.

    The outcome is remembered per chain and needles under `.git/carry/search/`: when the
    target has only moved on from one searched before, only the new commits are searched, so
    the daily rebase onto a moving main costs what the new upstream commits cost."""
    key = hashlib.sha256("\0".join([head, base, *needles]).encode()).hexdigest()[:32]
    path = repo.carry_dir() / "search" / f"{key}.json"
    known = _remembered(path) if remember else []
    since: dict[str, Any] | None = None
    for entry in reversed(known[-3:]):
        if entry["target"] == target:
            return set(entry["marked"]), list(entry["hits"])
        if repo.is_ancestor(entry["target"], target):
            since = entry
            break
    stop = [base, since["target"]] if since else [base]
    jobs = max(1, min(os.cpu_count() or 1, 4))
    with ThreadPoolExecutor(2) as pool:
        marks = pool.submit(repo.cherry_marked, head, target, stop, jobs)
        grep = pool.submit(repo.grep_log, [target, *(f"^{x}" for x in stop)], needles)
        marked, hits = marks.result(), grep.result()
    if since:
        marked |= set(since["marked"])
        hits += [h for h in since["hits"] if h not in hits]
    if remember:
        known = [e for e in known if e["target"] != target][-7:]
        known.append({"target": target, "marked": sorted(marked), "hits": hits})
        write_json(path, {"sum": _digest(known), "entries": known})
    return marked, hits


def _digest(entries: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()


def _remembered(path: Path) -> list[dict[str, Any]]:
    """The searches kept for this chain, if the file is whole: a damaged one is searched
    again, since a wrong mark would drop a patch upstream does not have."""
    try:
        data = untrusted.read_json(path, dict, missing_ok=True) or {}
        entries = data["entries"]
        if data["sum"] == _digest(entries) and all(
                isinstance(e["target"], str) and isinstance(e["marked"], list)
                and isinstance(e["hits"], list) for e in entries):
            return list(entries)
    except (CarryError, ValueError, TypeError, KeyError):
        pass
    return []


def _by_patch_id(repo: Repo, carried: Sequence[Carried], marked: set[str],
                 drops: dict[int, Drop]) -> None:
    """Name the upstream twin of each marked patch: one patch-id pass over marked commits."""
    ours = {c.commit.sha for c in carried}
    hit = [c for c in carried if c.commit.sha in marked]
    if not hit:
        return
    theirs = sorted(marked - ours)
    mine: dict[str, str] = {}
    upstream: dict[str, str] = {}
    for pid, commit in repo.log_patch_ids([*(c.commit.sha for c in hit), *theirs],
                                         no_walk=True):
        if commit in ours:
            mine[commit] = pid
        else:
            upstream.setdefault(pid, commit)
    for c in hit:
        twin = upstream.get(mine.get(c.commit.sha, ""))
        if c.number not in drops:
            what = _describe(repo, twin) if twin else "a commit of the target"
            drops[c.number] = Drop(f"patch-id equal to upstream {what}", twin or "")


def _needles(carried: Sequence[Carried], provenance: Sequence[Provenance]) -> list[str]:
    needles: list[str] = []
    for c in carried:
        for t in c.patch.trailers:
            if t.is_("Change-Id") or t.is_("Link"):
                needles.append(t.value)
        if c.patch.origin:
            needles.append(f"cherry picked from commit {c.patch.origin[:7]}")
    for number in _equivalents(provenance):
        needles += [f"(#{number})", f"Merge pull request #{number} "]
    return [n for n in dict.fromkeys(needles) if n.strip()]


def _by_message(repo: Repo, carried: Sequence[Carried], hits: list[RawCommit],
                provenance: Sequence[Provenance], drops: dict[int, Drop]) -> None:
    equivalents = _equivalents(provenance)
    for commit in reversed(hits):  # oldest first, so a reason names the first upstream form
        tlist = trailermod.parse(commit.message)
        change_ids = {t.value for t in tlist if t.is_("Change-Id")}
        links = {t.value for t in tlist if t.is_("Link")}
        picked = set(trailermod.cherry_picked_from(commit.message))
        for c in carried:
            if c.number in drops:
                continue
            reason = _trailer_match(c, commit, change_ids, links, picked)
            if reason:
                drops[c.number] = Drop(f"{reason} {_describe(repo, commit.sha)}", commit.sha)
        for number, provs in equivalents.items():
            squash = commit.subject.rstrip().endswith(f"(#{number})")
            merge = len(commit.parents) > 1 and commit.subject.startswith(
                f"Merge pull request #{number} ")
            if not (squash or merge):
                continue
            for prov in provs:
                how = "squash-merged" if squash else "merged"
                for n in prov.patches:
                    if n not in drops and any(c.number == n for c in carried):
                        drops[n] = Drop(f"provenance: {prov.pr} ({prov.role}) is {how} upstream "
                                        f"as {_describe(repo, commit.sha)}", commit.sha)


def _trailer_match(c: Carried, commit: RawCommit, change_ids: set[str], links: set[str],
                   picked: set[str]) -> str:
    for t in c.patch.trailers:
        if t.is_("Change-Id") and t.value in change_ids:
            return f"Change-Id {t.value} matches upstream"
    if c.patch.origin and any(len(v) >= 7 and c.patch.origin.startswith(v) for v in picked):
        return f"upstream cherry-picked the original commit {c.patch.origin[:12]}:"
    for t in c.patch.trailers:
        # A Link can name a bug report that several commits share, so it only counts
        # together with the same subject: the same patch, perhaps edited, landed upstream.
        if t.is_("Link") and t.value in links and commit.subject == c.patch.subject:
            return f"Link {t.value} and subject match upstream"
    return ""


def _by_reachability(repo: Repo, carried: Sequence[Carried], base: str, target: str,
                     provenance: Sequence[Provenance], drops: dict[int, Drop]) -> None:
    """Recorded commits (`cherry picked from` trailers, `merged_as`) that the target holds."""
    for c in carried:
        if c.number in drops:
            continue
        for value in trailermod.cherry_picked_from(c.patch.message):
            sha = repo.try_rev_parse(value)
            if sha and repo.is_ancestor(sha, target) and not repo.is_ancestor(sha, base):
                drops[c.number] = Drop(f"cherry-picked from {_describe(repo, sha)}, which the "
                                       "target contains", sha)
                break
    numbers = {c.number for c in carried}
    for prov in provenance:
        if prov.role not in EQUIVALENT_ROLES or not prov.merged_as or not prov.patches:
            continue
        sha = repo.try_rev_parse(prov.merged_as)
        if sha is None or not repo.is_ancestor(sha, target):
            continue
        for n in prov.patches:
            if n in numbers and n not in drops:
                drops[n] = Drop(f"provenance: {prov.pr} ({prov.role}) merged as "
                                f"{_describe(repo, sha)}, which the target contains", sha)


def _equivalents(provenance: Sequence[Provenance]) -> dict[str, list[Provenance]]:
    out: dict[str, list[Provenance]] = {}
    for prov in provenance:
        if prov.role in EQUIVALENT_ROLES and prov.patches:
            out.setdefault(prov.pr.rsplit("#", 1)[1], []).append(prov)
    return out


def _describe(repo: Repo, sha: str) -> str:
    return f"{sha[:12]} \"{repo.read_commit(sha).subject}\""


def _in_repo(pr: str, repo: str) -> bool:
    """Whether `OWNER/REPO#N` is a PR of `repo` (a bare `#N` is taken as upstream's)."""
    owner_repo = pr.rsplit("#", 1)[0]
    return not repo or not owner_repo or owner_repo.lower() == repo.lower()
