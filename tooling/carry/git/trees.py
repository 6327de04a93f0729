"""Trees in-process: parsed once per handle, diffed by set operations, edited by rewriting only
the entries that change, and written as loose objects through `Objects`."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from carry.base.errors import CarryError
from carry.git.objects import Entry, Objects

_ENTRY = re.compile(rb"(\d+) ([^\0]*)\0(.{20})", re.S)  # one entry of a tree object
_MODES = (b"100644", b"100755", b"120000", b"160000", b"40000")


class Trees(Objects):
    def tree_items(self, tree: str) -> dict[bytes, Entry]:
        """A tree's entries, name -> (mode, sha), parsed from cat-file (trees never change)."""
        items = self._trees.get(tree)
        if items is None:
            self.read_trees([tree])
            items = self._trees[tree]
        return items

    def read_trees(self, trees: Sequence[str]) -> None:
        """Parse and keep the trees not kept yet, read in one exchange."""
        missing = [t for t in dict.fromkeys(trees) if t not in self._trees]
        for tree, (_, kind, body) in zip(missing, self.read_objects(missing), strict=True):
            if kind != "tree":
                raise CarryError(f"{tree[:12]} is a {kind}, not a tree")
            items = {name: (mode, raw.hex()) for mode, name, raw in _ENTRY.findall(body)}
            self._remember(tree, items, body)

    def read_paths(self, tree: str, paths: Iterable[bytes]) -> None:
        """Read and keep the trees on the way to each path, one exchange per depth rather
        than one per directory: for a replay that is about to diff them all."""
        level: dict[str, set[bytes]] = {tree: set(paths)}
        while level:
            self.read_trees(list(level))
            deeper: dict[str, set[bytes]] = {}
            for sha, subs in level.items():
                items = self.tree_items(sha)
                for path in subs:
                    first, sep, rest = path.partition(b"/")
                    entry = items.get(first)
                    if sep and entry is not None and entry[0] == b"40000":
                        deeper.setdefault(entry[1], set()).add(rest)
            level = deeper

    def _remember(self, tree: str, items: dict[bytes, Entry], body: bytes) -> None:
        """Keep a tree's entries and bytes: an edit of it then rewrites only what changed."""
        if len(self._trees) > 4096:
            self._trees.clear()
            self._bodies.clear()
        self._trees[tree] = items
        self._bodies[tree] = body

    def tree_changes(self, a: str, b: str, prefix: bytes = b""
                     ) -> dict[bytes, tuple[Entry | None, Entry | None]]:
        """The entries below directories that differ between trees `a` and `b` ("" for
        none), found in-process: subtrees with equal ids are never read. A path that is a
        file on one side and a directory on the other raises."""
        if a == b:
            return {}
        self.read_trees([t for t in (a, b) if t])
        ia = self.tree_items(a) if a else {}
        ib = self.tree_items(b) if b else {}
        out: dict[bytes, tuple[Entry | None, Entry | None]] = {}
        subtrees = []
        for name in {n for n, _ in ia.items() ^ ib.items()}:  # set operations, not a loop
            ea, eb = ia.get(name), ib.get(name)
            ta, tb = bool(ea and ea[0] == b"40000"), bool(eb and eb[0] == b"40000")
            if ea and eb and ta != tb:
                raise CarryError(f"{(prefix + name).decode('utf-8', 'replace')} changes type")
            if ta or tb:
                subtrees.append((ea[1] if ea and ta else "", eb[1] if eb and tb else "",
                                 prefix + name + b"/"))
            else:
                out[prefix + name] = (ea, eb)
        self.read_trees([t for sa, sb, _ in subtrees for t in (sa, sb) if t])
        for sa, sb, sub in subtrees:
            out.update(self.tree_changes(sa, sb, sub))
        return out

    def tree_lookup(self, tree: str, path: bytes) -> Entry | None:
        *dirs, name = path.split(b"/")
        for d in dirs:
            entry = self.tree_items(tree).get(d)
            if entry is None or entry[0] != b"40000":
                return None
            tree = entry[1]
        return self.tree_items(tree).get(name)

    def committed_trees(self, path: str) -> set[str]:
        """Every tree the folder `path` (relative to the top) had in a commit of any ref that
        changed it: whether a version of a series folder was ever committed."""
        roots = self._out("log", "--all", "--full-history", "--format=%T", "--", path).split()
        self.read_trees(roots)
        found = (self.tree_lookup(t, path.encode("utf-8", "surrogateescape")) for t in roots)
        return {e[1] for e in found if e is not None and e[0] == b"40000"}

    def edit_tree(self, tree: str | None,
                  changes: Mapping[bytes, Entry | None]) -> str | None:
        """`tree` with each path set to (mode, sha) or removed (None), the new trees written
        in-process; None for a tree left empty. A change that would turn a file into a
        directory raises, so that callers fall back to git's own index handling."""
        return self._edit(tree, changes, None)

    def predict_tree(self, tree: str, changes: Mapping[bytes, Entry | None],
                     expect: str) -> bool:
        """Whether `tree` with `changes` is the existing tree `expect`, worked out in memory
        and checked by its id; if so its trees are kept parsed, so nothing of `expect` needs
        reading (a merge whose result was foreseen)."""
        made: list[tuple[str, dict[bytes, Entry], bytes]] = []
        try:
            if self._edit(tree, changes, made) != expect:
                return False
        except CarryError:
            return False
        for sha, items, body in made:
            self._remember(sha, items, body)
        return True

    def _edit(self, tree: str | None, changes: Mapping[bytes, Entry | None],
              made: list[tuple[str, dict[bytes, Entry], bytes]] | None) -> str | None:
        """`edit_tree`, or with `made` the same trees hashed, not written, and listed."""
        old = self.tree_items(tree) if tree else {}
        items = dict(old)
        nested: dict[bytes, dict[bytes, Entry | None]] = {}
        for path, value in changes.items():
            first, sep, rest = path.partition(b"/")
            if sep:
                nested.setdefault(first, {})[rest] = value
            elif value is None:
                items.pop(first, None)
            else:
                items[first] = value
        for name, sub in nested.items():
            entry = items.get(name)
            if entry is not None and entry[0] != b"40000":
                raise CarryError(f"{name.decode('utf-8', 'replace')} is a file, not a directory")
            new = self._edit(entry[1] if entry else None, sub, made)
            if new is None:
                items.pop(name, None)
            else:
                items[name] = (b"40000", new)
        if not items:
            return None
        touched = {path.partition(b"/")[0] for path in changes}
        body = _spliced(self._bodies.get(tree or ""), old, items, touched) or \
            _serialized(items)
        if made is not None:
            sha = hashlib.sha1(b"tree %d\0" % len(body) + body, usedforsecurity=False).hexdigest()
            made.append((sha, items, body))
            return sha
        sha = self.write_object("tree", body)
        self._remember(sha, items, body)
        return sha

    def derive_tree(self, a: str, b: str, paths: Iterable[bytes]) -> None:
        """Keep tree `b` parsed without parsing it, when it is tree `a` with entries changed
        at `paths` only (a merge's result against its upstream side): each such entry is
        looked up in b's bytes, and b's bytes are rebuilt from a's and compared, so nothing
        is taken on trust. Any doubt leaves `b` to be parsed as usual."""
        body_a = self._bodies.get(a)
        if a == b or b in self._trees or body_a is None:
            return
        (_, kind, body_b), = self.read_objects([b])
        nested: dict[bytes, set[bytes]] = {}
        for path in paths:
            first, sep, rest = path.partition(b"/")
            nested.setdefault(first, set())
            if sep:
                nested[first].add(rest)
        old = self.tree_items(a)
        items = dict(old)
        for name in nested:
            entry = _find_entry(body_b, name)
            if entry is False:
                return
            if entry is None:
                items.pop(name, None)
            else:
                items[name] = entry
        if kind != "tree" or (_spliced(body_a, old, items, nested) or
                              _serialized(items)) != body_b:
            return
        self._remember(b, items, body_b)
        for name, subs in nested.items():
            ea, eb = old.get(name), items.get(name)
            if subs and ea and eb and ea[0] == eb[0] == b"40000":
                self.derive_tree(ea[1], eb[1], subs)


def _serialized(items: Mapping[bytes, Entry]) -> bytes:
    order = sorted(items, key=lambda n: n + b"/" if items[n][0] == b"40000" else n)
    return b"".join(items[n][0] + b" " + n + b"\0" + bytes.fromhex(items[n][1]) for n in order)


def _find_entry(body: bytes, name: bytes) -> Entry | Literal[False] | None:
    """The entry `name` in a tree's bytes; None when the name is nowhere in them, False when
    it is there more than once or with a mode git does not write (the caller checks the
    answer by rebuilding the bytes)."""
    key = b" " + name + b"\0"
    at = body.find(key)
    if at < 0:
        return None
    if body.find(key, at + 1) >= 0:
        return False
    sha = body[at + len(key):at + len(key) + 20]
    mode = next((m for m in _MODES if body[max(0, at - len(m)):at] == m), None)
    return (mode, sha.hex()) if mode is not None and len(sha) == 20 else False


def _spliced(body: bytes | None, old: dict[bytes, Entry], new: dict[bytes, Entry],
             names: Iterable[bytes]) -> bytes | None:
    """`body` (the bytes of the tree `old`) with the entries `names` (the only ones that may
    differ in `new`) rewritten in place; None when one of them comes or goes or turns from a
    file into a directory (the order may change), or when an entry's bytes are not unique in
    `body`. Most edits replace one entry per level, and this spares touching the rest."""
    if body is None:
        return None
    for name in names:
        was, entry = old.get(name), new.get(name)
        if was == entry:
            continue
        if was is None or entry is None or (entry[0] == b"40000") != (was[0] == b"40000"):
            return None
        before = was[0] + b" " + name + b"\0" + bytes.fromhex(was[1])
        at = body.find(before)
        if at < 0 or body.find(before, at + 1) >= 0:
            return None
        body = body[:at] + entry[0] + b" " + name + b"\0" + bytes.fromhex(entry[1]) + \
            body[at + len(before):]
    return body
