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
that conflicts at U is taken with its markers: only P's own hunks decide). About log2(N)
probes of two `merge-tree`s each, no worktree, and only for the conflicting patches. A
non-monotone line still gives a real transition: a commit where P applies on its parent and
not on it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from carry.base.errors import CarryError
from carry.git import GRAFT_IDENT, Entry, RawCommit, Repo
from carry.replay.runs import PatchResult

CONFLICTING = ("conflict", "would-conflict")
LEFT_OUT = ("conflict", "skipped", "would-conflict")
_PR = re.compile(r"\(#(\d+)\)\s*$|^Merge pull request #(\d+)")


def annotate(repo: Repo, steps: list[PatchResult], onto: str) -> None:
    """Set `builds_on` or `cause` on every conflicting step of a replay onto `onto`."""
    todo = [i for i, s in enumerate(steps) if s.status in CONFLICTING and s.source]
    for i in todo:
        steps[i].cause, steps[i].builds_on = None, ""
    if not todo:
        return
    base = repo.read_commit(steps[0].source).parents[0]
    changes = repo.commit_changes([s.source for s in steps if s.source])
    line: list[str] | None = None
    for i in todo:
        p = repo.read_commit(steps[i].source)
        paths = set(changes.get(p.sha, {}))
        earlier = [steps[j] for j in range(i - 1, -1, -1) if steps[j].status in LEFT_OUT
                   and steps[j].source and paths & changes.get(steps[j].source, {}).keys()]
        try:
            context, on = _context(repo, p, earlier)
            if on is not None:
                steps[i].builds_on = on.file
                continue
            if line is None:
                line = _line(repo, base, onto)
            steps[i].cause = _bisect(repo, p, context, paths, base, line)
        except CarryError:  # a shape the in-memory merges cannot take: no why, no failure
            continue


def _context(repo: Repo, p: RawCommit, earlier: list[PatchResult]
             ) -> tuple[str, PatchResult | None]:
    """P's parent tree with the left-out patches taken out one by one, nearest first, and
    the first of them without which P no longer applies (None: P builds on none)."""
    tree = repo.read_commit(p.parents[0]).tree
    for s in earlier:
        undone = repo.unapply_tree(repo.read_commit(s.source), tree)
        if not undone.clean:  # a later applied patch changed its lines: cannot tell
            continue
        if not repo.merge_onto(undone.tree, p.parents[0], p.sha).clean:
            return tree, s
        tree = undone.tree
    return tree, None


def _line(repo: Repo, base: str, onto: str) -> list[str]:
    """The target's first-parent line, oldest first, from the base's merge-base with it; the
    merge-base itself first."""
    mb = repo.merge_base(base, onto)
    if mb is None:
        return []
    return [mb, *(repo.first_parent_chain(onto, mb) or [])]


def _bisect(repo: Repo, p: RawCommit, context: str, paths: set[bytes], base: str,
            line: list[str]) -> dict[str, Any] | None:
    """The first commit of `line` at which P conflicts (the probe below), when P conflicts at
    the target and not at the line's start; else None."""
    if len(line) < 2:
        return None
    base_tree = repo.read_commit(base).tree
    edits: dict[bytes, Entry | None] = {path: repo.tree_lookup(context, path) for path in paths}
    prefix = repo.write_commit(repo.edit_tree(base_tree, edits) or repo.write_object("tree", b""),
                               [base], b"carry prefix\n", GRAFT_IDENT, GRAFT_IDENT)

    def conflicts(u: str) -> bool:
        # The prefix may itself conflict at U where P does not (an earlier patch a maintainer
        # resolved by hand): its tree, markers and all, is still what P's hunks meet.
        carried = repo.merge_onto(repo.read_commit(u).tree, base, prefix)
        return not repo.merge_onto(carried.tree, p.parents[0], p.sha).clean

    good, bad = 0, len(line) - 1
    if not conflicts(line[bad]) or (line[good] != base and conflicts(line[good])):
        return None
    while bad - good > 1:
        mid = (good + bad) // 2
        if conflicts(line[mid]):
            bad = mid
        else:
            good = mid
    c = repo.read_commit(line[bad])
    return {"sha": c.sha, "subject": c.subject, "pr": pr_number(c.subject)}


def pr_number(subject: str) -> int | None:
    """The PR a squash-merged (`... (#N)`) or merged (`Merge pull request #N`) commit came
    from."""
    m = _PR.search(subject)
    return int(m.group(1) or m.group(2)) if m else None


def explain(steps: Sequence[PatchResult]) -> list[dict[str, Any]]:
    """One entry per conflicting patch, root conflicts first (series order within each), with
    the one line a person reads."""
    status = {s.file: s.status for s in steps}
    out = [{"file": s.file, "status": s.status, "cause": s.cause, "builds_on": s.builds_on,
            "text": describe(s, status.get(s.builds_on, ""))}
           for s in steps if s.status in CONFLICTING]
    return sorted(out, key=lambda e: bool(e["builds_on"]))


def describe(step: PatchResult, on_status: str = "") -> str:
    """"0007 conflicts since upstream abc123 'Rename foo (#12)'", "0009 builds on 0007,
    which was skipped"."""
    num = _num(step.file)
    verb = "conflicts" if step.status == "conflict" else "would conflict"
    if step.builds_on:
        which = {"skipped": "was skipped", "conflict": "conflicts",
                 "would-conflict": "would conflict too"}.get(on_status, "was left out")
        return f"{num} builds on {_num(step.builds_on)}, which {which}"
    c = step.cause
    if c:
        return f"{num} {verb} since upstream {str(c.get('sha', ''))[:12]} '{c.get('subject')}'"
    return f"{num} {verb}; no single upstream commit on the target's line explains it"


def _num(file: str) -> str:
    return file.split("-", 1)[0]
