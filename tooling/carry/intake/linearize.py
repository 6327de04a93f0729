"""A fork branch that merged upstream, made a linear series that keeps what the merges resolved.

Fork branches merge upstream ("Merge remote-tracking branch 'upstream/main' into ...") rather
than rebase, and each such merge carries its own resolutions: its tree is not git's automatic
merge of its parents. Dropping the merge loses them, and git's own linearising rebase stops
wherever they were needed. So, as git's contrib/rerere-train.sh learns from merges, each merge
of upstream is replayed here onto the commits carried so far, which move onto its upstream
side:

- the commit just before the merge takes the merge's whole tree, so everything the merge
  resolved, evil edits included, lands there and nothing of it is lost;
- an earlier commit takes the merge's content for a path only it touches (the resolution is
  its alone), else a clean three-way merge of the path;
- a path that cannot be carried cleanly is left for the next commit that touches it, which
  absorbs it with its own change when the two together carry cleanly (else it carries its own
  change alone, if that does), and at last for the commit before the merge.

The commits after the last merge keep their trees, so the series ends on the branch tip's
exact tree, on the last upstream commit the branch merged (the series base). Every commit
keeps its author, date, message and encoding byte for byte; only its tree may change, and the
report says which patch absorbed which part of which merge.

A merge is "of upstream" when the range's base contains its second parent (the first is the
fork's own line, as `git merge` and `git pull` make it). Anything else is refused, in one line:
octopus merges, merges of an unrelated history, and merges of two fork branches, whose sides
are both the series' own commits; linearising those would mean choosing an interleaving of two
lines of work and rewriting one side's patches with the other's content, a choice that belongs
to the maintainer, and there is no upstream side to absorb the merge into.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from carry.base.errors import CarryError
from carry.git import Entry, MergeResult, RawCommit, Repo
from carry.intake.upstreams import passed_over
from carry.series import patches as patchmod


@dataclass(frozen=True)
class Merge:
    """One merge of upstream the import linearised."""

    merge: str
    upstream: str
    subject: str


@dataclass(frozen=True)
class Absorbed:
    """A part of a merge that one patch took. `part` is "tree" (the commit before the merge:
    the paths where the merge's tree is not what carrying the commit gave), "resolution" (the
    merge's content of paths only this commit touched, where it is not the automatic merge) or
    "deferred" (an earlier patch's change to `paths` that could not be carried cleanly across
    the merge; `source` names that patch)."""

    patch: str
    commit: str
    merge: str
    part: str
    paths: list[str]
    source: str = ""


@dataclass(frozen=True)
class Dropped:
    """A fork commit that changes nothing once carried onto the upstream a merge brought in."""

    commit: str
    subject: str
    merge: str
    why: str


@dataclass(frozen=True)
class Changed:
    """A patch whose diff is not its fork commit's (`carry check --against-repo` says so
    rather than fail it), and why: the parts of merges it absorbed, or its carrying across
    them onto a newer upstream."""

    patch: str
    commit: str
    why: str


@dataclass(frozen=True)
class Report:
    merges: list[Merge]
    absorbed: list[Absorbed] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)  # merges of an upstream already merged
    changed: list[Changed] = field(default_factory=list)  # patches whose diff is not the fork's

    def summary(self) -> str:
        """One line for the series' changelog."""
        parts = []
        for m in self.merges:
            took = [f"{a.patch[:4]} {PART[a.part]} ({len(a.paths)} path"
                    f"{'s' if len(a.paths) != 1 else ''})"
                    for a in self.absorbed if a.merge == m.merge]
            parts.append(f"merge {m.merge[:12]} of upstream {m.upstream[:12]}"
                         + (": " + ", ".join(took) if took else ""))
        text = "linearised " + "; ".join(parts)
        if self.dropped:
            text += "; dropped " + ", ".join(d.commit[:12] for d in self.dropped)
        if self.passed:
            text += "; passed over " + ", ".join(m[:12] for m in self.passed)
        return text


PART = {"tree": "took its tree", "resolution": "took its resolution",
         "deferred": "took over an earlier patch's change"}


@dataclass
class Linear:
    """The range as a linear series: `commits` (sha -> commit, oldest first) on `base`, and
    for each written commit the fork commit it carries (`origin`)."""

    base: RawCommit
    commits: dict[str, RawCommit]
    head: str
    origin: dict[str, str] = field(default_factory=dict)
    report: Report | None = None

    def named(self, formatted: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
        """format-patch output whose `From <sha>` lines name the fork's own commits: the
        written ones are reachable from nothing, and provenance (a `cherry picked from`
        trailer upstream, `carry check --against-repo`) is about the originals."""
        out = []
        for sha, text in formatted:
            orig = self.origin.get(sha)
            if orig and text.startswith(b"From " + sha.encode() + b" "):
                text = b"From " + orig.encode() + text[5 + len(sha):]
            out.append((sha, text))
        return out


def linearize(repo: Repo, base: RawCommit, read: dict[str, RawCommit], desc: str) -> Linear:
    """`read`, the range's commits oldest first, as a linear series; unchanged without merges."""
    head = next(reversed(read))
    merges = [c for c in read.values() if len(c.parents) > 1]
    if not merges:
        return Linear(base, read, head)
    skip = passed_over(repo, base.sha, read, desc)  # all refusals before any work
    chain = _Chain(repo)
    for commit in read.values():
        parent = commit.parents[0] if commit.parents and commit.parents[0] in read else None
        if commit.sha in skip:
            chain.pass_over(commit)
        elif len(commit.parents) == 2:
            chain.merge(commit, commit.parents[0], repo.read_commit(commit.parents[1]))
        else:
            chain.add(commit, parent)
    return chain.finish(desc)


@dataclass(eq=False)  # one commit in one pass: compared by identity
class _Item:
    orig: RawCommit
    tree: str


class _Chain:
    """The fork's commits carried so far, on the last upstream commit merged (`onto`)."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.items: list[_Item] = []
        self.base_tree = ""
        self.onto = ""
        self.merges: list[Merge] = []
        self.absorbed: list[tuple[_Item, str, str, list[bytes], _Item | None]] = []
        self.dropped: list[Dropped] = []
        self.waiting: RawCommit | None = None  # a merge no commit preceded: the next absorbs it
        self.passed: list[str] = []  # merges of an upstream already merged

    def add(self, commit: RawCommit, parent: str | None) -> None:
        """A fork commit; its parent is the last one added, or the range's base."""
        if not commit.parents:
            raise CarryError(f"commit {commit.sha[:12]} ({commit.subject!r}) has no parent: "
                             "the range reaches the root of a history, which is no patch")
        if parent is None:
            parent_tree = self.repo.read_commit(commit.parents[0]).tree
            if not self.items and not self.merges:
                self.base_tree = parent_tree
        else:
            parent_tree = self.repo.read_commit(parent).tree
        if commit.tree == parent_tree:
            raise CarryError(f"commit {commit.sha[:12]} ({commit.subject!r}) has no patch: it "
                             "changes nothing; refusing to lose any",
                             hint="drop the empty commit from the range, or give it a change")
        item = _Item(commit, commit.tree)
        if self.waiting is not None:
            paths = self._touched(self.base_tree, self.waiting.tree)
            if paths:
                self.absorbed.append((item, self.waiting.sha, "tree", paths, None))
            self.waiting = None
        self.items.append(item)

    def pass_over(self, merge: RawCommit) -> None:
        """A merge that brings in no upstream change (`upstreams`): the commits stay on the
        newest upstream merged, and the merge, whose tree is its fork side's, is no patch."""
        if not self.items and not self.merges:
            self.base_tree = merge.tree
        self.passed.append(merge.sha)

    def merge(self, merge: RawCommit, fork: str, up: RawCommit) -> None:
        """Carry every commit so far onto `up`, learning from `merge` what it resolved."""
        self.merges.append(Merge(merge.sha, up.sha, merge.subject))
        if not self.items:
            self.base_tree, self.onto, self.waiting = up.tree, up.sha, merge
            return
        if self.items[-1].tree != self.repo.read_commit(fork).tree:
            raise CarryError(f"merge commit {merge.sha[:12]}: its fork side is not the commit "
                             "before it in the range")
        old = [self.base_tree, *(i.tree for i in self.items)]
        touched = [self._touched(a, b) for a, b in zip(old, old[1:], strict=False)]
        owners = Counter(p for paths in touched for p in paths)
        pending: dict[bytes, tuple[Entry | None, list[_Item]]] = {}  # anchor, who left it
        ours, kept, last = up.tree, [], len(self.items) - 1
        for k, item in enumerate(self.items):
            paths = touched[k]
            anchors = {p: pending[p][0] for p in paths if p in pending}
            base = self._edit(old[k], anchors) if anchors else old[k]
            carried, stuck = self._carry(base, ours, old[k + 1], paths, item.orig)
            own = self._own(stuck & set(anchors), old[k], ours, old[k + 1], paths, item.orig)
            if own:
                carried = self._edit(carried, own, fallback="") or carried
            for p in sorted(set(anchors) - stuck):
                for source in pending.pop(p)[1]:
                    self._deferred(item, merge, p, source)
            for p in stuck - set(own):
                pending.setdefault(p, (self.repo.tree_lookup(base, p), []))[1].append(item)
            if k == last:  # the commit before the merge: the merge's tree, all of it
                for p, (_, sources) in sorted(pending.items()):
                    for source in sources:
                        if source is not item:
                            self._deferred(item, merge, p, source)
                tree = merge.tree
                self._took(item, merge, "tree", self._touched(carried, tree))
            else:  # the merge's content where the path is this commit's alone
                sole = {p: self.repo.tree_lookup(merge.tree, p)
                        for p in paths if owners[p] == 1}
                tree = self._edit(carried, sole, fallback=carried)
                self._took(item, merge, "resolution", sorted(
                    p for p, e in sole.items() if self.repo.tree_lookup(carried, p) != e))
                for p in sole:
                    pending.pop(p, None)
            if tree == ours:
                self._drop(item, merge, up, left=any(item in pending.get(p, (None, []))[1]
                                                     for p in paths))
            else:
                kept.append(_Item(item.orig, tree))
            ours = tree
        self.items = kept
        self.base_tree, self.onto = up.tree, up.sha

    def _drop(self, item: _Item, merge: RawCommit, up: RawCommit, left: bool) -> None:
        """A commit that changes nothing once carried: said, not silently lost."""
        why = (f"its change conflicts with upstream {up.sha[:12]}; the later patches that "
               "took it over are listed" if left else
               f"upstream {up.sha[:12]} already has its change, or merge {merge.sha[:12]} kept "
               "upstream's side")
        self.dropped.append(Dropped(item.orig.sha, item.orig.subject, merge.sha, why))

    def _carry(self, base: str, ours: str, theirs: str, paths: list[bytes],
               who: RawCommit) -> tuple[str, set[bytes]]:
        """A three-way merge of `theirs` onto `ours` from `base` (the commit's own change
        carried across), and the paths of the commit's own it could not carry cleanly."""
        if base == ours:
            return theirs, set()
        if base == theirs:
            return ours, set()
        merged = self._merge3(base, ours, theirs, who)
        if merged.clean:
            return merged.tree, set()
        conflicted = {git_path(c) for c in merged.conflicts}
        take = {p: self.repo.tree_lookup(merged.tree, p) for p in paths if p not in conflicted}
        tree = self._edit(ours, take, fallback="")
        if not tree:
            return ours, set(paths)
        return tree, conflicted & set(paths)

    def _own(self, left: set[bytes], base: str, ours: str, theirs: str, paths: list[bytes],
             who: RawCommit) -> dict[bytes, Entry | None]:
        """Where an earlier commit's change to a path cannot come along with this one's, this
        commit's own change alone, if that carries cleanly: the path stays left for later."""
        if not left:
            return {}
        alone, stuck = self._carry(base, ours, theirs, paths, who)
        return {p: self.repo.tree_lookup(alone, p) for p in sorted(left - stuck)}

    def _merge3(self, base: str, ours: str, theirs: str, who: RawCommit) -> MergeResult:
        """git's merge-tree with `base` as the merge base: both sides are committed on it."""
        root = self.repo.write_commit(base, [], b"carry linearize: base\n", who.author,
                                      who.author)
        sides = [self.repo.write_commit(t, [root], b"carry linearize\n", who.author, who.author)
                 for t in (ours, theirs)]
        return self.repo.merge_tree(*sides)

    def _edit(self, tree: str, changes: dict[bytes, Entry | None], fallback: str | None = None
              ) -> str:
        """`tree` with `changes`; `fallback` when git's tree rules refuse them (a file that
        would become a directory), which leaves the change to a later commit's tree."""
        try:
            edited = self.repo.edit_tree(tree, changes)
        except CarryError:
            if fallback is None:
                raise
            return fallback
        return edited or self.repo.write_object("tree", b"")

    def _touched(self, a: str, b: str) -> list[bytes]:
        try:
            return sorted(self.repo.tree_changes(a, b))
        except CarryError:  # a path that turns from a file into a directory: git's own diff
            return sorted(p.encode("utf-8", "surrogateescape")
                          for p in self.repo.changed_files(a, b, deleted=True))

    def _took(self, item: _Item, merge: RawCommit, part: str, paths: list[bytes]) -> None:
        if paths:
            self.absorbed.append((item, merge.sha, part, paths, None))

    def _deferred(self, item: _Item, merge: RawCommit, path: bytes, source: _Item) -> None:
        for i, (who, sha, part, paths, src) in enumerate(self.absorbed):
            if (who, sha, part, src) == (item, merge.sha, "deferred", source):
                self.absorbed[i] = (who, sha, part, [*paths, path], src)
                return
        self.absorbed.append((item, merge.sha, "deferred", [path], source))

    def finish(self, desc: str) -> Linear:
        if not self.items:
            raise CarryError(f"{desc} has no commits of its own on top of the upstream "
                             f"{self.onto[:12]} it merged")
        parent, commits, origin = self.onto, {}, {}
        names: dict[str, str] = {}
        for number, item in enumerate(self.items, 1):
            c = item.orig
            sha = self.repo.write_commit(item.tree, [parent], c.message, c.author, c.committer,
                                         c.encoding)
            commits[sha] = RawCommit(sha, item.tree, (parent,), c.author, c.committer,
                                     c.message, c.encoding)
            origin[sha] = c.sha
            names[c.sha] = patchmod.file_name(number, c.subject)
            parent = sha
        absorbed = [Absorbed(names[who.orig.sha], who.orig.sha, sha, part, _shown(paths),
                             _name(names, src) if src else "")
                    for who, sha, part, paths, src in self.absorbed if who.orig.sha in names]
        report = Report(self.merges, absorbed, self.dropped, self.passed)
        return Linear(self.repo.read_commit(self.onto), commits, parent, origin, report)


def _name(names: dict[str, str], item: _Item) -> str:
    return names.get(item.orig.sha) or f"commit {item.orig.sha[:12]}"


def _shown(paths: Iterable[bytes]) -> list[str]:
    return [p.decode("utf-8", "replace") for p in sorted(paths)]


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def git_path(name: str) -> bytes:
    """A path as git prints it without -z: C-quoted (`"\\303\\251 x"`) when it holds a byte
    core.quotePath escapes, else as it is."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name.encode("utf-8", "surrogateescape")
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out += ch.encode("utf-8", "surrogateescape")
            i += 1
        elif body[i + 1] in "01234567":
            out.append(int(body[i + 1:i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(_ESCAPES.get(body[i + 1], ord(body[i + 1])))
            i += 2
    return bytes(out)
