"""Objects without a process per object: reads through one long-lived `git cat-file --batch`
(as git-revise does) or from a loose object's file, and commits and trees written in-process
as loose objects, byte-exact."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import subprocess
import zlib
from collections.abc import Iterable, Sequence
from contextlib import suppress
from pathlib import Path

from carry.base.childenv import git_env
from carry.base.errors import CarryError
from carry.git.base import EOO, Base, GitError, Ident, RawCommit

Entry = tuple[bytes, str]  # (mode, sha) of one tree entry
_TMP = itertools.count()
_SHA = re.compile(r"[0-9a-f]{40}")


class Objects(Base):
    def _batch(self) -> subprocess.Popen[bytes]:
        if self._catfile is None or self._catfile.poll() is not None:
            self._catfile = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=str(self.path),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=git_env(),
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
                    if len(header) != 3 or not header[2].isdigit():  # `<rev> missing` (a rev
                        unknown.append(rev)  # may hold spaces), `<rev> ambiguous`
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

    def show_file(self, treeish: str, path: str) -> bytes | None:
        proc = self._run("show", EOO, f"{treeish}:{path}", check=False)
        return proc.stdout if proc.returncode == 0 else None

    def committer_ident(self) -> Ident:
        """The running user as git itself would record them (config and GIT_COMMITTER_*)."""
        return Ident.parse(self._out("var", "GIT_COMMITTER_IDENT"))


def _create(folder: str) -> tuple[int, str]:
    """A new read-only temporary file in `folder` (made if missing), named by process and a
    counter as git names its own (`tempfile` draws random names, which costs more)."""
    import tempfile

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
