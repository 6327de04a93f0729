"""Objects without a process per object: reads through one long-lived `git cat-file --batch`
(as git-revise does), and commits and trees written in-process as loose objects, byte-exact."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import zlib
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path

from carry.errors import CarryError
from carry.git.base import Base, GitError, Ident, RawCommit

Entry = tuple[bytes, str]  # (mode, sha) of one tree entry


class Objects(Base):
    def _batch(self) -> subprocess.Popen[bytes]:
        if self._catfile is None or self._catfile.poll() is not None:
            self._catfile = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=str(self.path),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        return self._catfile

    def read_object(self, rev: str) -> tuple[str, str, bytes]:
        """Return (sha, type, body) through the long-lived cat-file process."""
        with self._lock:
            proc = self._batch()
            assert proc.stdin and proc.stdout
            proc.stdin.write(rev.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().decode().split()
            if len(header) != 3:
                raise CarryError(f"unknown object {rev!r} in {self.path}")
            sha, kind, size = header
            body = proc.stdout.read(int(size))
            proc.stdout.read(1)
        return sha, kind, body

    def read_commit(self, rev: str) -> RawCommit:
        sha, kind, body = self.read_object(rev)
        if kind != "commit":
            raise CarryError(f"{rev!r} is a {kind}, not a commit")
        return parse_commit(sha, body)

    def close(self) -> None:
        if self._catfile is not None:
            if self._catfile.stdin:
                self._catfile.stdin.close()
            self._catfile.wait()
            self._catfile = None

    def _object_dir(self) -> Path | None:
        """Where loose objects go; None when git must write them itself (sha256 or shared
        repositories, whose formats and permissions carry does not reproduce)."""
        if self._odb is None:
            lines = self._out("rev-parse", "--git-path", "objects",
                             "--show-object-format").splitlines()
            shared = self._run("config", "--get", "core.sharedRepository", check=False).stdout
            objects = Path(lines[0]) if os.path.isabs(lines[0]) else self.path / lines[0]
            self._odb = (objects, len(lines) == 2 and lines[1] == "sha1" and not shared.strip())
        return self._odb[0] if self._odb[1] else None

    def write_object(self, kind: str, body: bytes) -> str:
        """Store one object as a loose file exactly as git would, without starting a process:
        a replay writes two commits per patch, and a process each would double its cost."""
        objects = self._object_dir()
        if objects is None:
            return self._out("hash-object", "-w", "-t", kind, "--stdin", input=body)
        data = b"%s %d\0" % (kind.encode(), len(body)) + body
        sha = hashlib.sha1(data, usedforsecurity=False).hexdigest()
        path = objects / sha[:2] / sha[2:]
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix="tmp_obj_", dir=str(path.parent))
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(zlib.compress(data, 1))
                os.chmod(tmp, 0o444)
                os.replace(tmp, path)
            except BaseException:
                with suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
        return sha

    def write_commit(
        self,
        tree: str,
        parents: Iterable[str],
        message: bytes,
        author: Ident,
        committer: Ident,
        encoding: str | None = None,
    ) -> str:
        """commit-tree without the process: the message and identities go in byte-exact
        (git's own identity parsing strips the quotes and dots that end `"Quoted, Name" Jr.`
        and turns a `-0000` zone into `+0000`)."""
        for who in (author, committer):
            if any(c in who.name + who.email for c in "<>\n\0"):
                raise CarryError(f"cannot write the identity {who.line()!r}: a name or email "
                                 "with '<', '>' or a line break would corrupt the commit")
        head = [f"tree {tree}", *(f"parent {p}" for p in parents),
                f"author {author.line()}", f"committer {committer.line()}"]
        if encoding:
            head.append(f"encoding {encoding}")
        raw = "\n".join(head).encode("utf-8", "surrogateescape") + b"\n\n" + message
        return self.write_object("commit", raw)

    def tree_items(self, tree: str) -> dict[bytes, Entry]:
        """A tree's entries, name -> (mode, sha), parsed from cat-file (trees never change)."""
        items = self._trees.get(tree)
        if items is None:
            sha, kind, body = self.read_object(tree)
            if kind != "tree":
                raise CarryError(f"{tree[:12]} is a {kind}, not a tree")
            items, i = {}, 0
            while i < len(body):
                sp = body.index(b" ", i)
                nul = body.index(b"\0", sp)
                items[body[sp + 1:nul]] = (body[i:sp], body[nul + 1:nul + 21].hex())
                i = nul + 21
            if len(self._trees) > 4096:
                self._trees.clear()
            self._trees[tree] = items
        return items

    def tree_changes(self, a: str, b: str, prefix: bytes = b""
                     ) -> dict[bytes, tuple[Entry | None, Entry | None]]:
        """The entries below directories that differ between trees `a` and `b` ("" for
        none), found in-process: subtrees with equal ids are never read. A path that is a
        file on one side and a directory on the other raises."""
        if a == b:
            return {}
        ia = self.tree_items(a) if a else {}
        ib = self.tree_items(b) if b else {}
        out: dict[bytes, tuple[Entry | None, Entry | None]] = {}
        for name in ia.keys() | ib.keys():
            ea, eb = ia.get(name), ib.get(name)
            if ea == eb:
                continue
            ta, tb = bool(ea and ea[0] == b"40000"), bool(eb and eb[0] == b"40000")
            if ea and eb and ta != tb:
                raise CarryError(f"{(prefix + name).decode('utf-8', 'replace')} changes type")
            if ta or tb:
                out.update(self.tree_changes(ea[1] if ea and ta else "",
                                             eb[1] if eb and tb else "", prefix + name + b"/"))
            else:
                out[prefix + name] = (ea, eb)
        return out

    def tree_lookup(self, tree: str, path: bytes) -> Entry | None:
        *dirs, name = path.split(b"/")
        for d in dirs:
            entry = self.tree_items(tree).get(d)
            if entry is None or entry[0] != b"40000":
                return None
            tree = entry[1]
        return self.tree_items(tree).get(name)

    def edit_tree(self, tree: str | None,
                  changes: Mapping[bytes, Entry | None]) -> str | None:
        """`tree` with each path set to (mode, sha) or removed (None), the new trees written
        in-process; None for a tree left empty. A change that would turn a file into a
        directory raises, so that callers fall back to git's own index handling."""
        items = dict(self.tree_items(tree)) if tree else {}
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
            new = self.edit_tree(entry[1] if entry else None, sub)
            if new is None:
                items.pop(name, None)
            else:
                items[name] = (b"40000", new)
        if not items:
            return None
        order = sorted(items, key=lambda n: n + b"/" if items[n][0] == b"40000" else n)
        body = b"".join(items[n][0] + b" " + n + b"\0" + bytes.fromhex(items[n][1])
                        for n in order)
        sha = self.write_object("tree", body)
        self._trees[sha] = items
        return sha

    def show_file(self, treeish: str, path: str) -> bytes | None:
        proc = self._run("show", f"{treeish}:{path}", check=False)
        return proc.stdout if proc.returncode == 0 else None

    def committer_ident(self) -> Ident:
        """The running user as git itself would record them (config and GIT_COMMITTER_*)."""
        return Ident.parse(self._out("var", "GIT_COMMITTER_IDENT"))


def parse_commit(sha: str, body: bytes) -> RawCommit:
    head, _, message = body.partition(b"\n\n")
    tree = ""
    parents: list[str] = []
    author = committer = None
    encoding = None
    for line in head.split(b"\n"):
        key, _, value = line.partition(b" ")
        text = value.decode("utf-8", "surrogateescape")
        if key == b"tree":
            tree = text
        elif key == b"parent":
            parents.append(text)
        elif key == b"author":
            author = Ident.parse(text)
        elif key == b"committer":
            committer = Ident.parse(text)
        elif key == b"encoding":
            encoding = text
    if author is None or committer is None:
        raise GitError(f"commit {sha[:12]} has no author or committer")
    return RawCommit(sha, tree, tuple(parents), author, committer, message, encoding)
