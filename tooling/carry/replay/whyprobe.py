"""The merges behind a why (`replay.why`), for many conflicting patches at once.

Each patch's questions are asked in order, as before: is P still applying with the nearest
earlier left-out patch taken out, then the next; at the target, at the line's start, then
bisected. But each patch asks as a generator that yields the merges it needs next and is
sent whether each is clean, and `together` runs every patch's generator in lockstep, so
that one round's merges, of all the patches, are decided by one `Merges.clean_merges` (one
`git merge-tree` of their content merges). The answers are those of asking one by one: a
merge `clean_merges` cannot tell is merged on its own, where it was asked. A few merges are
asked ahead of need (the next earlier patches, the bisection's next two levels) to save
rounds; their answers are only used where the one-by-one order reaches them.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Collection, Generator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from carry.base.errors import CarryError
from carry.git import GRAFT_IDENT, Content, Entry, RawCommit, Repo

Asks = list[tuple[str, str, str, Collection[bytes]]]  # merge_onto's arguments, one a merge
Plan = Generator[Asks, list[bool | None], Any]


def together(repo: Repo, plans: Sequence[Plan], known: dict[Content, bool],
             joining: Callable[[], Sequence[Plan]] | None = None) -> list[Any]:
    """Each plan's return value: every round, the merges all plans yield are asked in one
    `clean_merges` (`known`: the content merges answered before), and each plan is sent
    its own answers. Before each round the plans `joining` gives join in, their values
    after those of `plans`: a conflict the forecast finds while others are being worked
    out shares their next `merge-tree` instead of starting rounds of its own."""
    results: list[Any] = []
    active: list[Plan] = []
    asked: dict[int, Asks] = {}

    def step(i: int, answers: list[bool | None] | None) -> None:
        try:
            asked[i] = active[i].send(answers)  # type: ignore[arg-type]
        except StopIteration as done:
            asked.pop(i, None)
            results[i] = done.value

    def start(new: Sequence[Plan]) -> None:
        for plan in new:
            active.append(plan)
            results.append(None)
            step(len(active) - 1, None)

    start(plans)
    while True:
        if joining is not None:
            start(joining())
        if not asked:
            return results
        flat = [ask for mine in asked.values() for ask in mine]
        try:
            answers = repo.clean_merges(flat, known)
        except CarryError:  # each plan then merges its own, as it would alone
            answers = [None] * len(flat)
        at = 0
        for i, mine in list(asked.items()):
            step(i, answers[at:at + len(mine)])
            at += len(mine)


def context(repo: Repo, p: RawCommit, paths: set[bytes],
            earlier: list[tuple[str, str, set[bytes]]]
            ) -> Generator[Asks, list[bool | None], tuple[str, str | None]]:
    """P's parent tree with the left-out patches taken out one by one (at P's paths),
    nearest first, and the first of them without which P no longer applies (None: P builds
    on none). The trees are made in memory, each only when its group is asked, up to one
    only git's merge can make; P's merges onto them are asked in growing groups (1, 2,
    4...): one round when P builds on the nearest, four when on the eleventh, and the
    trees past the answer are never made."""
    tree = repo.read_commit(p.parents[0]).tree
    group: list[tuple[str, str, str]] = []  # (patch taken out, tree before, tree after)
    size = 1
    for source, _, shared in earlier:
        commit = repo.read_commit(source)
        try:
            undone = repo.unapply_trivially(commit, tree, shared)
        except CarryError:  # asked in turn, the tries before it were merged first
            undone = None
        if undone is None:
            on = yield from _first_on(repo, p, paths, group)
            if on is not None:
                return on
            group = []
            undone = repo.unapply_tree(commit, tree, shared)
        if undone.clean:  # else a later applied patch changed its lines: cannot tell
            group.append((source, tree, undone.tree))
            tree = undone.tree
        if len(group) >= size:
            on = yield from _first_on(repo, p, paths, group)
            if on is not None:
                return on
            group, size = [], size * 2
    return (yield from _first_on(repo, p, paths, group)) or (tree, None)


def _first_on(repo: Repo, p: RawCommit, paths: set[bytes], group: list[tuple[str, str, str]]
              ) -> Generator[Asks, list[bool | None], tuple[str, str] | None]:
    """The first of `group` (a patch taken out, the trees before and after) after which P
    no longer applies, with the tree before it; its merges asked in one round."""
    if not group:
        return None
    answers = yield [(after, p.parents[0], p.sha, paths) for _, _, after in group]
    for (source, before, after), clean in zip(group, answers, strict=True):
        if clean is None:
            clean = repo.merge_onto(after, p.parents[0], p.sha, paths).clean
        if not clean:
            return before, source
    return None


@dataclass
class Line:
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
    def of(cls, repo: Repo, base: str, mb: str, onto: str, paths: set[bytes]) -> Line:
        """The line, with the commits that change `paths` (every conflicting patch's: one
        `git log` for them all, of every name, filtered here)."""
        names = repo.first_parent_names(mb, onto) if mb else []
        return cls(repo, base, mb, onto, [(c, n & paths) for c, n in names if n & paths])

    def every(self) -> list[str]:
        if self._all is None:
            self._all = self.repo.first_parent_chain(self.onto, self.mb) or []
        return self._all


def bisect(repo: Repo, p: RawCommit, context: str, paths: set[bytes], line: Line,
           cause: Callable[[RawCommit], dict[str, Any]]
           ) -> Generator[Asks, list[bool | None], dict[str, Any] | None]:
    """The `cause` of the first commit of the line at which P conflicts (the probe below),
    when P conflicts at the target and not at the line's start; else None.

    At a commit U, the series prefix (P's own paths, as P found them) is carried onto U by
    one merge from the series base, and P conflicts at U when its merge onto that is not
    clean. P's merge depends only on what U holds at P's paths, so the probes look at those
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

    def small(tree: str) -> str:
        edits: dict[bytes, Entry | None] = {path: repo.tree_lookup(tree, path) for path in paths}
        return repo.edit_tree(base_tree, edits) or repo.write_object("tree", b"")

    def at(u: str) -> str:
        tree = repo.read_commit(u).tree
        return tree if moved else small(tree)

    prefix = repo.write_commit(small(context), [base], b"carry prefix\n", GRAFT_IDENT,
                               GRAFT_IDENT)
    seen: dict[str, bool] = {}

    def ask(us: list[str]) -> Generator[Asks, list[bool | None], None]:
        """Whether P conflicts at each of `us`, into `seen`, where the prefix is carried
        onto it in memory; a commit asked later by `conflicts` merges the rest itself."""
        carried: dict[str, str] = {}
        for u in us:
            with suppress(CarryError):  # a tree only `conflicts` may need, and raise for
                ours = at(u)
                done = repo.trivial_merge(ours, base, prefix, paths)
                if ours not in seen and done is not None:
                    carried[ours] = done.tree
        if carried:
            answers = yield [(tree, p.parents[0], p.sha, paths) for tree in carried.values()]
            seen.update((ours, not clean) for ours, clean in zip(carried, answers, strict=True)
                        if clean is not None)

    def conflicts(u: str) -> bool:
        # The prefix may itself conflict at U where P does not (an earlier patch a maintainer
        # resolved by hand): its tree, markers and all, is still what P's hunks meet.
        ours = at(u)
        if ours not in seen:
            carried = repo.merge_onto(ours, base, prefix, paths)
            seen[ours] = not repo.merge_onto(carried.tree, p.parents[0], p.sha, paths).clean
        return seen[ours]

    probes = [line.mb, *(line.every() if moved else
                         [c for c, changed in line.touching if changed & paths])]
    good, bad = 0, len(probes) - 1
    if bad == 0:
        return None
    yield from ask([probes[bad], *([line.mb] if line.mb != base else []),
                    *_ahead(probes, good, bad)])
    if not conflicts(probes[bad]) or (line.mb != base and conflicts(line.mb)):
        return None
    while bad - good > 1:
        yield from ask(_ahead(probes, good, bad))
        mid = (good + bad) // 2
        if conflicts(probes[mid]):
            bad = mid
        else:
            good = mid
    return cause(repo.read_commit(probes[bad]))


def _ahead(probes: list[str], good: int, bad: int) -> list[str]:
    """The commits the bisection of `probes[good:bad + 1]` probes in its next two steps,
    whichever way the first goes."""
    mid = (good + bad) // 2
    return [probes[i] for i in ((good + mid) // 2, mid, (mid + bad) // 2) if good < i < bad]


def look(line: Line, paths: set[bytes]) -> str:
    """The command that lists the target's commits which change the patch's files since the
    series base: where a maintainer looks when no single commit explains a conflict."""
    if not line.mb:
        return ""
    files = sorted(p.decode("utf-8", "surrogateescape") for p in paths)
    return shlex.join(["git", "log", "--oneline", "--first-parent",
                       f"{line.mb[:12]}..{line.onto[:12]}", "--", *files])
