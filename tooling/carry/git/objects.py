"""Objects without a process per object: reads through one long-lived `git cat-file --batch`
(as git-revise does), and commits and trees written in-process as loose objects, byte-exact."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import subprocess
import tempfile
import zlib
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path

from carry.errors import CarryError
from carry.git.base import Base, GitError, Ident, RawCommit

Entry = tuple[bytes, str]  # (mode, sha) of one tree entry
_TMP = itertools.count()
_SHA = re.compile(r"[0-9a-f]{40}")
_ENTRY = re.compile(rb"(\d+) ([^\0]*)\0(.{20})", re.S)  # one entry of a tree object


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
        return self.read_objects([rev])[0]

    def read_objects(self, revs: Sequence[str]) -> list[tuple[str, str, bytes]]:
        """(sha, type, body) of each rev. An object git left loose (a merge's new trees) is
        read from its file: on a busy machine cat-file's turn costs more than the read. The
        rest is asked for in groups, each answered in one exchange."""
        found = {rev: self._loose(rev) for rev in revs}
        asked = [rev for rev, got in found.items() if got is None]
        if asked:
            found.update(zip(asked, self._ask(asked), strict=True))
        return [found[rev] or ("", "", b"") for rev in revs]

    def _loose(self, rev: str) -> tuple[str, str, bytes] | None:
        if self._odb is None or not self._odb[1] or not _SHA.fullmatch(rev):
            return None
        try:
            with open(f"{self._odb[0]}/{rev[:2]}/{rev[2:]}", "rb") as fh:
                data = zlib.decompress(fh.read())
        except (OSError, zlib.error):
            return None
        head, _, body = data.partition(b"\0")
        kind, _, size = head.partition(b" ")
        return (rev, kind.decode(), body) if size == b"%d" % len(body) else None

    def _ask(self, revs: Sequence[str]) -> list[tuple[str, str, bytes]]:
        """Objects from cat-file, a group of requests at a time: a group (under 64 KiB) fits
        in the pipe, so writing it all before reading the answers cannot block."""
        out, unknown = [], []
        with self._lock:
            proc = self._batch()
            assert proc.stdin and proc.stdout
            for at in range(0, len(revs), 512):
                group = revs[at:at + 512]
                proc.stdin.write(b"".join(rev.encode() + b"\n" for rev in group))
                proc.stdin.flush()
                for rev in group:  # every answer is read, so the next exchange starts clean
                    header = proc.stdout.readline().decode().split()
                    if len(header) != 3:
                        unknown.append(rev)
                        continue
                    sha, kind, size = header
                    out.append((sha, kind, proc.stdout.read(int(size))))
                    proc.stdout.read(1)
        if unknown:
            raise CarryError(f"unknown object {unknown[0]!r} in {self.path}")
        return out

    def read_commit(self, rev: str) -> RawCommit:
        return self.read_commits([rev])[0]

    def read_commits(self, revs: Sequence[str]) -> list[RawCommit]:
        """Commits, each parsed once per handle when named by its id (commits never change;
        a replay reads each patch's commit several times), the rest read in one exchange."""
        missing = [rev for rev in revs if rev not in self._commits]
        read = dict(zip(missing, self.read_objects(missing), strict=True)) if missing else {}
        if len(self._commits) + len(missing) > 65536:
            self._commits.clear()
        out = []
        for rev in revs:
            commit = self._commits.get(rev)
            if commit is None:
                sha, kind, body = read[rev]
                if kind != "commit":
                    raise CarryError(f"{rev!r} is a {kind}, not a commit")
                commit = parse_commit(sha, body)
                if rev == sha:
                    self._commits[sha] = commit
            out.append(commit)
        return out

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
        path = f"{objects}/{sha[:2]}/{sha[2:]}"
        if not os.path.exists(path):
            fd, tmp = _create(path[:-38])
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(zlib.compress(data, 1))
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

    def edit_tree(self, tree: str | None,
                  changes: Mapping[bytes, Entry | None]) -> str | None:
        """`tree` with each path set to (mode, sha) or removed (None), the new trees written
        in-process; None for a tree left empty. A change that would turn a file into a
        directory raises, so that callers fall back to git's own index handling."""
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
            new = self.edit_tree(entry[1] if entry else None, sub)
            if new is None:
                items.pop(name, None)
            else:
                items[name] = (b"40000", new)
        if not items:
            return None
        body = _spliced(self._bodies.get(tree or ""), old, items)
        if body is None:
            order = sorted(items, key=lambda n: n + b"/" if items[n][0] == b"40000" else n)
            body = b"".join(items[n][0] + b" " + n + b"\0" + bytes.fromhex(items[n][1])
                            for n in order)
        sha = self.write_object("tree", body)
        self._remember(sha, items, body)
        return sha

    def show_file(self, treeish: str, path: str) -> bytes | None:
        proc = self._run("show", f"{treeish}:{path}", check=False)
        return proc.stdout if proc.returncode == 0 else None

    def committer_ident(self) -> Ident:
        """The running user as git itself would record them (config and GIT_COMMITTER_*)."""
        return Ident.parse(self._out("var", "GIT_COMMITTER_IDENT"))


def _create(folder: str) -> tuple[int, str]:
    """A new read-only temporary file in `folder` (made if missing), named by process and a
    counter as git names its own (`tempfile` draws random names, which costs more)."""
    tmp = f"{folder}tmp_obj_{os.getpid()}_{next(_TMP)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        return os.open(tmp, flags, 0o444), tmp
    except FileNotFoundError:
        os.makedirs(folder, exist_ok=True)
        return os.open(tmp, flags, 0o444), tmp
    except FileExistsError:  # left by a killed process that had our pid
        fd, tmp = tempfile.mkstemp(prefix="tmp_obj_", dir=folder)
        os.chmod(tmp, 0o444)
        return fd, tmp


def _spliced(body: bytes | None, old: dict[bytes, Entry], new: dict[bytes, Entry]
             ) -> bytes | None:
    """`body` (the bytes of the tree `old`) with the entries that `new` replaces rewritten in
    place; None when names come or go or a file becomes a directory (the order may change),
    or an entry's bytes are not unique in `body`. Most edits replace one entry per level, and
    this spares re-serializing the rest."""
    if body is None or new.keys() != old.keys():
        return None
    for name, entry in new.items():
        was = old[name]
        if entry == was:
            continue
        if (entry[0] == b"40000") != (was[0] == b"40000"):
            return None
        before = was[0] + b" " + name + b"\0" + bytes.fromhex(was[1])
        at = body.find(before)
        if at < 0 or body.find(before, at + 1) >= 0:
            return None
        body = body[:at] + entry[0] + b" " + name + b"\0" + bytes.fromhex(entry[1]) + \
            body[at + len(before):]
    return body


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
