"""The worktree-free three-way merge the replay is built on: `git merge-tree --write-tree`
run in the background (`start_merge`), a patch replayed onto a tree through a graft commit
(`replay_tree`), a merge with a chosen base (`merge_onto`, worked out in memory where every
path merges trivially), an in-memory revert (`unapply_tree`) and the diff3-style conflict a
recorded resolution is keyed on (`conflicted_merge`)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable
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


@dataclass
class PendingMerge:
    """A `git merge-tree` running; `result` waits for it."""

    args: tuple[str, ...]
    proc: subprocess.Popen[bytes]
    staged: bool = False  # `-z` in diff3 style: the conflicts' stages are read too

    def result(self) -> MergeResult:
        """The merge's outcome. With $CARRY_TRACE_MERGES set, its two commits and the tree
        are appended to that file, so a benchmark can time exactly the merges carry ran as
        raw git and check that git gives the same trees (bench/bench_replay.py)."""
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
        trace = os.environ.get("CARRY_TRACE_MERGES")
        if trace:
            with open(trace, "a", encoding="ascii") as fh:
                fh.write(f"{self.args[-2]} {self.args[-1]} {lines[0]}\n")
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
        trace = os.environ.get("CARRY_TRACE_MERGES")
        if trace:
            with open(trace, "a", encoding="ascii") as fh:
                fh.write(f"{graft} {commit.sha} {tree}\n")
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
            done = self._trivial_merge(ours_tree, base, theirs, paths)
            if done is not None:
                return done
        graft = self.write_commit(ours_tree, [base], b"carry graft\n", GRAFT_IDENT, GRAFT_IDENT)
        return self.merge_tree(graft, theirs)

    def _trivial_merge(self, ours_tree: str, base: str, theirs: str,
                       paths: Iterable[bytes]) -> MergeResult | None:
        before, after = self.read_commit(base).tree, self.read_commit(theirs).tree
        edits: dict[bytes, Entry | None] = {}
        for path in paths:
            b, o, t = (self.tree_lookup(x, path) for x in (before, ours_tree, after))
            if t == b or o == t:
                continue
            if o != b:
                return None  # both sides changed it: git's content merge decides
            edits[path] = t
        try:
            tree = self.edit_tree(ours_tree, edits) if edits else ours_tree
        except CarryError:  # a file that becomes a directory: git's own merge
            return None
        return MergeResult(tree or self.write_object("tree", b""), True, ())

    def unapply_tree(self, commit: RawCommit, tree: str,
                     paths: Iterable[bytes] | None = None) -> MergeResult:
        """`tree` (which holds `commit`'s change) without that change: merge(base=commit,
        ours=tree, theirs=commit's parent), the revert `git revert` would make, in memory;
        with `paths`, taken out at those paths only (the rest of it may not come out cleanly,
        and need not)."""
        if not commit.parents:
            raise CarryError(f"cannot take out root commit {commit.sha[:12]}")
        before = self.read_commit(commit.parents[0]).tree
        if paths is not None:
            before = self.edit_tree(commit.tree, {p: self.tree_lookup(before, p)
                                                  for p in paths}) or self.write_object(
                "tree", b"")
        back = self.write_commit(before, [commit.sha], b"carry revert\n", GRAFT_IDENT,
                                 GRAFT_IDENT)
        return self.merge_onto(tree, commit.sha, back, paths)


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
