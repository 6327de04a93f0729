"""Patches applied through private index files, never the user's index or worktree.

A patch is first applied to a small index holding only the entries it names (`apply_sparse`);
only when that cannot be used does a private index of the whole tree take it (`apply_full`),
the way StGit applies through a temporary index before it touches a worktree."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from carry.base import scratch
from carry.git import indexfile
from carry.git.base import EOO, INDEX_PREFIX, GitError
from carry.git.objects import Entry
from carry.git.trees import Trees


class ApplyError(GitError):
    """A diff that `git apply` refused; `index` is its position in the list given."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


class Index(Trees):
    @contextmanager
    def _temp_index(self, tree: str | None = None, where: Path | None = None
                    ) -> Iterator[dict[str, str]]:
        """A private index file named after this process (`carry.base.scratch`), so that a later
        run can tell a dead run's leftover from a live one's."""
        import tempfile

        where = where or self.carry_dir()
        fd, name = tempfile.mkstemp(prefix=scratch.prefix(INDEX_PREFIX), dir=str(where))
        os.close(fd)
        os.unlink(name)
        env = {"GIT_INDEX_FILE": name}
        try:
            if tree:
                self._run("read-tree", EOO, tree, env=env)
            yield env
        finally:
            for suffix in ("", ".lock"):
                with suppress(FileNotFoundError):
                    os.unlink(name + suffix)

    def apply_full(self, tree: str, diffs: Sequence[bytes]) -> list[str]:
        """The tree after each diff, applied in turn to a private index of `tree`; a diff that
        does not apply raises GitError with `.index` set to its position."""
        out = []
        with self._temp_index(tree) as env:
            for i, diff in enumerate(diffs):
                try:
                    self._run("apply", "--cached", "--whitespace=nowarn", "--allow-empty", "-",
                              input=diff, env=env)
                except GitError as exc:
                    raise ApplyError(str(exc), i) from None
                out.append(self._out("write-tree", env=env))
        return out

    def snapshot_tree(self, directory: Path) -> str:
        """The tree of every file under `directory` (ignored ones too), written without
        touching the repository's own index."""
        with self._temp_index() as env:
            self._run("add", "-A", "--force", "--", ".",
                      env={**env, "GIT_WORK_TREE": str(directory)}, cwd=directory)
            return self._out("write-tree", env=env)

    def overlay_tree(self, base: str, source: str, paths: Sequence[str]) -> str:
        """`base`'s tree with `paths` as `source` has them (removed where it has none),
        edited in-process: cost follows the paths, not the size of the tree."""
        src = self.read_commit(source).tree
        changes = {p.encode("utf-8", "surrogateescape"): self.tree_lookup(
            src, p.encode("utf-8", "surrogateescape")) for p in paths}
        return self.edit_tree(self.read_commit(base).tree, changes) or \
            self.write_object("tree", b"")

    def apply_sparse(self, diff: bytes) -> tuple[dict[bytes, Entry],
                                                  dict[bytes, Entry]]:
        """(before, after) for one patch: the entries it reads, as its own `index` lines name
        them (`git apply --build-fake-ancestor`), and the entries `git apply --cached` leaves
        in that small index. No index of the whole tree is read or written, which is what
        makes committing a patch cheap in a repository of 100k files."""
        with self._temp_index() as env:
            name = env["GIT_INDEX_FILE"]
            self._run("apply", f"--build-fake-ancestor={name}", "--numstat", "-", input=diff)
            before = self._index_entries(env) if os.path.exists(name) else {}
            self._run("apply", "--cached", "--whitespace=nowarn", "--allow-empty", "-",
                      input=diff, env=env)
            return before, self._index_entries(env)

    def apply_entries(self, diff: bytes, before: Mapping[bytes, Entry]) -> dict[bytes, Entry]:
        """The entries `git apply --cached` leaves in a small index of `before` (the entries
        the patch reads, written in-process): one git process for the patch. An index git
        writes in a form this reader does not take raises GitError."""
        with self._temp_index() as env:
            name = env["GIT_INDEX_FILE"]
            with open(name, "wb") as fh:
                fh.write(indexfile.encode(before))
            self._run("-c", "core.splitIndex=false", "apply", "--cached", "--whitespace=nowarn",
                      "--allow-empty", "-", input=diff, env=env)
            with open(name, "rb") as fh:
                try:
                    return indexfile.decode(fh.read())
                except indexfile.IndexFormatError as exc:
                    raise GitError(f"git apply left an index carry does not read: {exc}"
                                   ) from None

    def _index_entries(self, env: Mapping[str, str]) -> dict[bytes, Entry]:
        out = self._run("ls-files", "--stage", "-z", env=env).stdout
        entries = {}
        for rec in out.split(b"\0"):
            if rec:
                meta, _, path = rec.partition(b"\t")
                mode, sha, _stage = meta.split(b" ")
                entries[path] = (mode, sha.decode())
        return entries
