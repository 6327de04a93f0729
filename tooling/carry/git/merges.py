"""The worktree-free three-way merge the replay is built on: `git merge-tree --write-tree`
run in the background (`start_merge`), a patch replayed onto a tree through a graft commit
(`replay_tree`), a merge with a chosen base (`merge_onto`, worked out in memory where every
path merges trivially; whether many such merges are clean, in one process: `clean_merges`),
an in-memory revert (`unapply_tree`) and the diff3-style conflict a
recorded resolution is keyed on (`conflicted_merge`)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from carry.base.childenv import git_env
from carry.base.errors import CarryError
from carry.git.base import EOO, GitError, Ident, MergeResult, RawCommit, complaint
from carry.git.objects import Entry
from carry.git.trees import Trees

_QUOTED = re.compile(rb'[\x00-\x1f"\\\x7f-\xff]')  # a path git's --name-only prints quoted

# Who the throw-away commits of an in-memory merge are by: fixed, so that the same merge
# asked again writes the same objects (and a cache keyed by them holds). Dated in 2100, not
# 1970: git finds a merge's base by walking newest first, and a graft dated 0 is reached
# last, after the other side's whole history (16,000 commits, 0.3 s a merge on vLLM).
GRAFT_IDENT = Ident("carry", "carry@localhost", "4102444800 +0000")
_BLOB = (b"100644", b"100755")
# a path and its base, ours and theirs entries: one content merge
Content = tuple[bytes, Entry, Entry, Entry]


@dataclass
class PendingMerge:
    """A `git merge-tree` running; `result` waits for it."""

    args: tuple[str, ...]
    proc: subprocess.Popen[bytes]
    staged: bool = False  # `-z` in diff3 style: the conflicts' stages are read too

    def result(self) -> MergeResult:
        """The merge's outcome (traced, see `_trace`)."""
        out, err = self.proc.communicate()
        if self.staged:
            tree, stages = _stages(out)
            lines = [tree] if tree else []
            names = [p.decode("utf-8", "replace") for p in stages]
        else:
            lines = out.decode("utf-8", "replace").splitlines()
            names, stages = [x for x in lines[1:] if x], {}
        if self.proc.returncode not in (0, 1) or not lines:  # 1 and nothing: a bad rev
            raise GitError(complaint(self.args, err or out))
        _trace(self.args[-2], self.args[-1], lines[0])
        return MergeResult(lines[0], self.proc.returncode == 0, tuple(names), stages)


class Merges(Trees):
    def merge_tree(self, ours: str, theirs: str) -> MergeResult:
        """A worktree-free three-way merge; the merge base is found by git."""
        return self.start_merge(ours, theirs).result()

    def start_merge(self, ours: str, theirs: str, staged: bool = False) -> PendingMerge:
        """`merge_tree` started, not waited for: the replay does its own work on the last
        merge's result while git runs the next. `staged`: merged as `replay_tree` merges
        (diff3, `-z`), with each conflicted path's stages, so that a run's conflict can stand
        for the one patch it blames (`known_conflict`)."""
        style = ("-c", "merge.conflictStyle=diff3") if staged else ()
        args = ("merge-tree", "--write-tree", "-z" if staged else "--name-only",
                "--no-messages", EOO, ours, theirs)
        return PendingMerge(args, subprocess.Popen(
            ["git", *style, *args], cwd=str(self.path), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=git_env()), staged)

    def replay_tree(self, commit: RawCommit, onto_tree: str) -> MergeResult:
        """`cherry_tree` with the graft written in-process: one git process per patch. It
        merges as `conflicted_merge` does (diff3, each conflicted path's stages; a clean tree
        is the same in any style), and keeps a conflict's answer, so that the replay asking
        next for its stages (a recorded or automatic resolution) runs no second merge."""
        if not commit.parents:
            raise CarryError(f"cannot replay root commit {commit.sha[:12]}")
        graft = self._graft(commit, onto_tree)
        args = ("merge-tree", "--write-tree", "-z", "--no-messages", graft, commit.sha)
        proc = self._run("-c", "merge.conflictStyle=diff3", *args, ok_codes=(0, 1))
        tree, stages = _stages(proc.stdout)
        if not tree:  # 1 and nothing: a bad rev
            raise GitError(complaint(args, proc.stderr or proc.stdout))
        _trace(graft, commit.sha, tree)
        self._conflicted.clear()
        if proc.returncode == 0:
            return MergeResult(tree, True, ())
        self._conflicted[graft, commit.sha] = tree, stages
        if any(_QUOTED.search(path) for path in stages):  # named as --name-only quotes them
            return MergeResult(tree, False, self.merge_tree(graft, commit.sha).conflicts)
        return MergeResult(tree, False, tuple(p.decode("utf-8", "replace") for p in stages))

    def known_conflict(self, commit: RawCommit, onto_tree: str, tree: str,
                       stages: dict[bytes, dict[int, Entry]]) -> MergeResult | None:
        """What `replay_tree(commit, onto_tree)` answers, from a larger merge that already
        found this patch's conflict with the same three inputs at each of its paths (a run's:
        `runs._blamed`), and kept as its answer as `replay_tree` keeps one; no process. None
        when a path would need --name-only's quoting: `replay_tree` asks git then."""
        if not stages or any(_QUOTED.search(path) for path in stages):
            return None
        self._conflicted.clear()
        self._conflicted[self._graft(commit, onto_tree), commit.sha] = tree, stages
        return MergeResult(tree, False, tuple(p.decode("utf-8", "replace") for p in stages),
                           stages)

    def _graft(self, commit: RawCommit, onto_tree: str) -> str:
        return self.write_commit(onto_tree, commit.parents[:1], b"carry graft\n",
                                 commit.author, commit.author)

    def conflicted_merge(self, commit: RawCommit, onto_tree: str
                         ) -> tuple[str, dict[bytes, dict[int, Entry]]]:
        """`replay_tree` again, for a patch that conflicts: the tree with its conflicts in
        diff3 style (the base between the sides, whatever the user's merge.conflictStyle),
        and each conflicted path's stages (1 base, 2 ours, 3 theirs). A recorded resolution
        is keyed on exactly this, so recording and replaying see the same hunks."""
        graft = self._graft(commit, onto_tree)
        known = self._conflicted.get((graft, commit.sha))
        if known is not None:
            return known[0], {path: dict(st) for path, st in known[1].items()}
        out = self._run("-c", "merge.conflictStyle=diff3", "merge-tree", "--write-tree", "-z",
                        "--no-messages", graft, commit.sha, ok_codes=(0, 1)).stdout
        return _stages(out)

    def merge_onto(self, ours_tree: str, base: str, theirs: str,
                   paths: Iterable[bytes] | None = None) -> MergeResult:
        """merge(base, ours, theirs) with a chosen base and no worktree. git 2.39's merge-tree
        has no --merge-base, so `ours_tree` is grafted onto `base`: with `theirs` a
        descendant of `base`, `base` is their one best common ancestor.

        `paths`, when given, are the only paths at which `theirs` differs from `base`; where
        at each of them one side kept the base's entry (or both sides made the same), the
        result is what git gives, worked out in memory without a process."""
        if paths is not None:
            done = self.trivial_merge(ours_tree, base, theirs, paths)
            if done is not None:
                return done
        graft = self.write_commit(ours_tree, [base], b"carry graft\n", GRAFT_IDENT, GRAFT_IDENT)
        return self.merge_tree(graft, theirs)

    def trivial_merge(self, ours_tree: str, base: str, theirs: str,
                      paths: Iterable[bytes]) -> MergeResult | None:
        """`merge_onto` with `paths` where it is worked out in memory; None where it needs
        git's merge."""
        before, after = self.read_commit(base).tree, self.read_commit(theirs).tree
        return self._trivially(ours_tree, [(path, self.tree_lookup(before, path),
                                            self.tree_lookup(after, path)) for path in paths])

    def _trivially(self, ours_tree: str, sides: list[tuple[bytes, Entry | None, Entry | None]]
                   ) -> MergeResult | None:
        """`trivial_merge` given each path's base and theirs entries."""
        edits: dict[bytes, Entry | None] = {}
        for path, b, t in sides:
            if t == b:
                continue
            o = self.tree_lookup(ours_tree, path)
            if o == t:
                continue
            if o != b:
                return None  # both sides changed it: git's content merge decides
            edits[path] = t
        try:
            tree = self.edit_tree(ours_tree, edits) if edits else ours_tree
        except CarryError:  # a file that becomes a directory: git's own merge
            return None
        return MergeResult(tree or self.write_object("tree", b""), True, ())

    def clean_merges(self, asks: Sequence[tuple[str, str, str, Collection[bytes]]],
                     known: dict[Content, bool] | None = None) -> list[bool | None]:
        """Whether each `merge_onto(ours_tree, base, theirs, paths)` is clean, for many merges
        in at most one `git merge-tree`; None where this cannot tell (the caller merges it).

        It tells a merge whose three sides hold regular files (or none) where `theirs`
        changed one, and in which no rename is possible: git pairs a deletion with an
        addition of the same side, so `theirs` must not both add and delete, nor `ours` add
        anywhere when one of these paths is deleted by it or added by `theirs` (a folder it
        renamed would move that file). Then every path merges by itself: clean where one
        side kept the base's entry or both made the same, a conflict where one deleted what
        the other modified, else as its three blobs merge by their attributes. Those
        content merges, of all the merges asked, are done together in one tree of their
        own, a path asked again under `carry-merge-N/`, kept only where `git check-attr`
        gives it the same attributes there (the same merge driver). `known` keeps each
        content merge's answer, so that a later call given it merges no path twice."""
        merged = {} if known is None else known
        wanted = [self._content_merges(*ask) for ask in asks]
        names: dict[Content, bytes] = {}
        again: dict[bytes, int] = {}
        for item in (x for w in wanted if isinstance(w, list) for x in w):
            if item not in names and item not in merged:
                n = again[item[0]] = again.get(item[0], -1) + 1
                names[item] = b"carry-merge-%d/%s" % (n, item[0]) if n else item[0]
        odd = self._attributes_differ([(item[0], name) for item, name in names.items()])
        kept = {item: name for item, name in names.items() if name not in odd}
        conflicted = self._merge_contents(kept) if kept else set()
        if conflicted is not None:
            merged.update((x, name not in conflicted) for x, name in kept.items())
        return [w if not isinstance(w, list) else None if any(x not in merged for x in w)
                else all(merged[x] for x in w) for w in wanted]

    def _content_merges(self, ours: str, base: str, theirs: str, paths: Collection[bytes]
                        ) -> list[Content] | bool | None:
        """The paths of a `clean_merges` merge both sides changed, with their entries; True
        for none (clean), False for a modify/delete no rename can explain (a conflict), None
        where a rename might (see `clean_merges`) or a side holds other than regular files."""
        before, after = self.read_commit(base).tree, self.read_commit(theirs).tree
        out: list[Content] = []
        added = deleted = clash = False  # theirs added, theirs deleted, a modify/delete
        gone = False  # ours deleted what theirs changed
        for path in paths:
            b, t = self.tree_lookup(before, path), self.tree_lookup(after, path)
            if t == b:
                continue
            o = self.tree_lookup(ours, path)
            if not {x[0] for x in (b, o, t) if x} <= set(_BLOB):
                return None
            if b is None:
                if o is not None:
                    return None  # add/add
                # a file on its way is ours' addition or the base's, which theirs deleted
                added = True
            elif o is None:
                gone, deleted = True, deleted or t is None
                clash = clash or t is not None
            elif t is None:
                deleted, clash = True, clash or o != b
            elif o not in (b, t):
                out.append((path, b, o, t))
        # a rename takes an addition and a deletion on the same side
        if (added and deleted) or ((added or gone) and self._adds(before, ours)):
            return None
        return False if clash else out or True

    def _adds(self, before: str, after: str) -> bool:
        """Whether `after` adds a path to `before` (or turns a file into a folder): what a
        rename needs."""
        try:
            return any(old is None for old, _ in self.tree_changes(before, after).values())
        except CarryError:
            return True

    def prime_attributes(self, paths: Iterable[bytes]) -> None:
        """Ask `git check-attr` now, in one process, for `paths` and the names
        `clean_merges` is likely to give them (`carry-merge-1/` to `-16/`), rather than in
        each call."""
        self._attributes_differ([(p, b"carry-merge-%d/%s" % (n, p)) for p in paths
                                 for n in range(1, 17)])

    def _attributes_differ(self, pairs: list[tuple[bytes, bytes]]) -> set[bytes]:
        """The second names of `pairs` whose attributes (`git check-attr -a`, one process for
        all those not asked before) are not the first's."""
        ask = list(dict.fromkeys(p for pair in pairs if pair[0] != pair[1] for p in pair
                                 if p not in self._attrs))
        if ask:
            try:
                out = self._run("check-attr", "-z", "--stdin", "-a",
                                input=b"".join(p + b"\0" for p in ask)).stdout.split(b"\0")
            except GitError:  # then none is known to be the same
                return {b for a, b in pairs if a != b}
            found: dict[bytes, list[bytes]] = {p: [] for p in ask}
            for i in range(0, len(out) - 2, 3):
                found.setdefault(out[i], []).append(out[i + 1] + b"=" + out[i + 2])
            self._attrs.update((p, b"\0".join(sorted(v))) for p, v in found.items())
        return {b for a, b in pairs if a != b and self._attrs.get(a) != self._attrs.get(b)}

    def _merge_contents(self, names: dict[Content, bytes]) -> set[bytes] | None:
        """The names of `names`' content merges that conflict, all merged in one `git
        merge-tree` of three trees holding only them; None when those trees cannot be made
        (a real path where a `carry-merge-N` folder goes) or git fails."""
        try:
            base, ours, theirs = (self.edit_tree(None, {name: side(item) for item, name in
                                                         names.items()}) or ""
                                  for side in (_base, _ours, _theirs))
        except CarryError:
            return None
        root = self.write_commit(base, [], b"carry merges\n", GRAFT_IDENT, GRAFT_IDENT)
        ours_c, theirs_c = (self.write_commit(tree, [root], b"carry merges\n", GRAFT_IDENT,
                                              GRAFT_IDENT) for tree in (ours, theirs))
        proc = self._run("merge-tree", "--write-tree", "-z", "--no-messages", ours_c, theirs_c,
                         ok_codes=(0, 1), check=False)
        tree, stages = _stages(proc.stdout)
        if proc.returncode not in (0, 1) or not tree:  # each is then merged on its own
            return None
        _trace(ours_c, theirs_c, tree)
        return set(stages)

    def unapply_tree(self, commit: RawCommit, tree: str,
                     paths: Iterable[bytes] | None = None) -> MergeResult:
        """`tree` (which holds `commit`'s change) without that change: merge(base=commit,
        ours=tree, theirs=commit's parent), the revert `git revert` would make, in memory;
        with `paths`, taken out at those paths only (the rest of it may not come out cleanly,
        and need not)."""
        return self.merge_onto(tree, commit.sha, self._reverted(commit, paths), paths)

    def unapply_trivially(self, commit: RawCommit, tree: str, paths: Collection[bytes]
                          ) -> MergeResult | None:
        """`unapply_tree` at `paths` where it is worked out in memory; None where it needs
        git's merge. The commit that takes `commit` out is only written when its tree cannot
        be made (then it raises, as `unapply_tree` does)."""
        if not commit.parents:
            raise CarryError(f"cannot take out root commit {commit.sha[:12]}")
        parent = self.read_commit(commit.parents[0]).tree
        back = {p: self.tree_lookup(parent, p) for p in paths}
        if self._edit_raises(commit.tree, back):
            return self.trivial_merge(tree, commit.sha, self._reverted(commit, paths), paths)
        return self._trivially(tree, [(p, self.tree_lookup(commit.tree, p), back[p])
                                      for p in paths])

    def _edit_raises(self, tree: str, changes: dict[bytes, Entry | None]) -> bool:
        """Whether `edit_tree(tree, changes)` would find a file where a change needs a
        folder, or change both a path and one below it (so that what it sets is not what
        it makes)."""
        for path in changes:
            parts = path.split(b"/")
            for n in range(1, len(parts)):
                up = b"/".join(parts[:n])
                e = self.tree_lookup(tree, up)
                if up in changes or (e is not None and e[0] != b"40000"):
                    return True
        return False

    def _reverted(self, commit: RawCommit, paths: Iterable[bytes] | None) -> str:
        """The commit that takes `commit` out (at `paths`), on top of it."""
        if not commit.parents:
            raise CarryError(f"cannot take out root commit {commit.sha[:12]}")
        before = self.read_commit(commit.parents[0]).tree
        if paths is not None:
            before = self.edit_tree(commit.tree, {p: self.tree_lookup(before, p)
                                                  for p in paths}) or self.write_object(
                "tree", b"")
        return self.write_commit(before, [commit.sha], b"carry revert\n", GRAFT_IDENT,
                                 GRAFT_IDENT)


def _trace(ours: str, theirs: str, tree: str) -> None:
    """With $CARRY_TRACE_MERGES set, a merge's two commits and its tree are appended to that
    file, so a benchmark can time exactly the merges carry ran as raw git and check that git
    gives the same trees (bench/bench_replay.py)."""
    trace = os.environ.get("CARRY_TRACE_MERGES")
    if trace:
        with open(trace, "a", encoding="ascii") as fh:
            fh.write(f"{ours} {theirs} {tree}\n")


def _base(item: Content) -> Entry:
    return item[1]


def _ours(item: Content) -> Entry:
    return item[2]


def _theirs(item: Content) -> Entry:
    return item[3]


def _stages(out: bytes) -> tuple[str, dict[bytes, dict[int, Entry]]]:
    """`merge-tree --write-tree -z`'s tree and each conflicted path's stages."""
    tree, *records = out.split(b"\0")
    stages: dict[bytes, dict[int, Entry]] = {}
    for rec in records:
        if not rec:
            break  # an empty record ends the conflicted files' list
        info, _, path = rec.partition(b"\t")
        mode, sha, stage = info.split(b" ")
        stages.setdefault(path, {})[int(stage)] = (mode, sha.decode())
    return tree.decode(), stages
