"""The one place that talks to git.

Plumbing runs as subprocesses with bytes in and bytes out, so that messages, author names and
patch bodies pass through untouched. Object reads go through one long-lived
`git cat-file --batch` per repository (as git-revise does) instead of a process per object.
GitPython is used where it saves code: opening and cloning repositories and reading identity.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from carry import scratch
from carry.errors import CarryError

NULL_SHA = "0" * 40
_FROM_LINE = re.compile(rb"^From ([0-9a-f]{40}) Mon Sep 17 00:00:00 2001$", re.M)

# Options that make format-patch bytes independent of the user's configuration, so that
# re-importing the same range writes the same bytes on any machine.
FORMAT_PATCH_ARGS = (
    "-k",
    "--no-signature",
    "--no-notes",
    "--no-thread",
    "--no-attach",
    "--no-cover-letter",
    "--encode-email-headers",
    "--full-index",
    "--binary",
    "--find-renames",
    "--no-color",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--stat=72",
    "--no-signoff",
    "--no-add-header",
    "--no-to",
    "--no-cc",
    "--no-from",
    "--no-base",
    "--no-force-in-body-from",
    "--no-numbered",
    "--pretty=email",
    "--encoding=UTF-8",
)
_STABLE_CONFIG = (
    "-c",
    "diff.noprefix=false",
    "-c",
    "diff.mnemonicPrefix=false",
    "-c",
    "diff.relative=false",
    "-c",
    "format.headers=",
    "-c",
    "core.quotePath=true",
    "-c",
    "diff.algorithm=myers",
)


class GitError(CarryError):
    """A git command failed; carries git's own first line of complaint."""


@dataclass(frozen=True)
class Ident:
    """An author or committer: name, email and the raw `<epoch> <tz>` date."""

    name: str
    email: str
    date: str

    @classmethod
    def parse(cls, raw: str) -> Ident:
        m = re.match(r"^(.*) <(.*)> (\d+ [+-]\d{4})$", raw)
        if not m:
            raise GitError(f"cannot parse identity line {raw!r}")
        return cls(m.group(1), m.group(2), m.group(3))

    def line(self) -> str:
        return f"{self.name} <{self.email}> {self.date}"

    def env(self, role: str) -> dict[str, str]:
        return {
            f"GIT_{role}_NAME": self.name,
            f"GIT_{role}_EMAIL": self.email,
            f"GIT_{role}_DATE": f"@{self.date}",
        }


@dataclass(frozen=True)
class RawCommit:
    sha: str
    tree: str
    parents: tuple[str, ...]
    author: Ident
    committer: Ident
    message: bytes
    encoding: str | None = None

    @property
    def subject(self) -> str:
        return self.message.split(b"\n", 1)[0].decode("utf-8", "replace")


@dataclass(frozen=True)
class MergeResult:
    tree: str
    clean: bool
    conflicts: tuple[str, ...]


@dataclass(frozen=True)
class LogEntry:
    sha: str
    author: str
    date: str  # ISO 8601, the author date
    subject: str


@dataclass
class Repo:
    """A git repository on disk, addressed by its top-level (or bare) directory."""

    path: Path
    _catfile: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _odb: tuple[Path, bool] | None = field(default=None, repr=False)
    _trees: dict[str, dict[bytes, tuple[bytes, str]]] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: str | Path) -> Repo:
        p = Path(path).expanduser()
        if not p.exists():
            raise CarryError(f"repository does not exist: {p}")
        # --show-toplevel fails in a bare repository, so ask for the git dir as well.
        out = subprocess.run(
            ["git", "-C", str(p), "rev-parse", "--is-bare-repository", "--absolute-git-dir",
             "--show-object-format"],
            capture_output=True, stdin=subprocess.DEVNULL,
        )
        if out.returncode != 0:
            raise CarryError(f"not a git repository: {p}")
        bare, git_dir, object_format = out.stdout.decode().splitlines()[:3]
        if object_format != "sha1":
            # Patch files, the manifest and carry's object writer all name SHA-1 ids.
            raise CarryError(f"{p} is a {object_format.upper().replace('SHA', 'SHA-')} "
                             "repository; carry supports SHA-1 repositories only")
        if bare == "true":
            return cls(Path(git_dir).resolve())
        top = subprocess.run(["git", "-C", str(p), "rev-parse", "--show-toplevel"],
                             capture_output=True, stdin=subprocess.DEVNULL)
        if top.returncode != 0:  # inside .git itself
            return cls(Path(git_dir).resolve())
        return cls(Path(top.stdout.decode().strip()).resolve())

    @classmethod
    def clone(cls, url: str, dest: Path) -> Repo:
        """Clone a URL (bare, all refs), used when import is given a remote repository.

        Blobs are fetched on demand: format-patch reads only the series' own files, so a
        vLLM-sized history costs commits and trees, not every file ever written.
        """
        import git as gitpython

        try:
            gitpython.Repo.clone_from(url, str(dest), bare=True, filter="blob:none")
        except gitpython.GitCommandError as exc:
            said = [ln.strip(" '") for ln in str(exc.stderr or "").splitlines()]
            why = next((ln[ln.index("fatal:"):] for ln in said if "fatal:" in ln), "git failed")
            raise CarryError(f"cannot clone {url}: {why}") from None
        try:
            return cls.open(dest)
        except CarryError as exc:
            raise CarryError(str(exc).replace(str(dest), url)) from None

    # -- running ---------------------------------------------------------------------------

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        ok_codes: Sequence[int] = (0,),
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        full_env = None
        if env:
            full_env = dict(os.environ)
            full_env.update(env)
        proc = subprocess.run(
            ["git", *args],
            cwd=str(cwd or self.path),
            input=input,
            # No git child ever reads carry's stdin: a command that wants input gets `input`,
            # every other one reads nothing (an open terminal or pipe never hangs it).
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            env=full_env,
        )
        if check and proc.returncode not in ok_codes:
            raise GitError(_complaint(args, proc.stderr or proc.stdout))
        return proc

    def out(self, *args: str, **kw: object) -> str:
        return self.run(*args, **kw).stdout.decode("utf-8", "replace").strip()  # type: ignore[arg-type]

    @property
    def git_dir(self) -> Path:
        return Path(self.out("rev-parse", "--absolute-git-dir"))

    @property
    def common_dir(self) -> Path:
        d = Path(self.out("rev-parse", "--git-common-dir"))
        return d if d.is_absolute() else (self.path / d).resolve()

    def carry_dir(self) -> Path:
        d = self.common_dir / "carry"
        d.mkdir(parents=True, exist_ok=True)
        return d

    # -- refs and revisions ----------------------------------------------------------------

    def rev_parse(self, rev: str, kind: str = "commit") -> str:
        proc = self.run("rev-parse", "--verify", "--quiet", f"{rev}^{{{kind}}}", check=False)
        if proc.returncode != 0:
            raise CarryError(f"unknown revision {rev!r} in {self.path}")
        return proc.stdout.decode().strip()

    def try_rev_parse(self, rev: str, kind: str = "commit") -> str | None:
        try:
            return self.rev_parse(rev, kind)
        except CarryError:
            return None

    def ref_exists(self, ref: str) -> bool:
        return self.run("show-ref", "--verify", "--quiet", ref, check=False).returncode == 0

    def merge_base(self, a: str, b: str) -> str | None:
        proc = self.run("merge-base", a, b, check=False)
        return proc.stdout.decode().strip() or None

    def is_ancestor(self, a: str, b: str) -> bool:
        return self.run("merge-base", "--is-ancestor", a, b, check=False).returncode == 0

    def shallow_boundary(self) -> set[str]:
        """The commits a shallow clone cut the history below (they look parentless to git)."""
        path = Path(self.out("rev-parse", "--git-path", "shallow"))
        path = path if path.is_absolute() else self.path / path
        return set(path.read_text().split()) if path.is_file() else set()

    def rev_list(self, *args: str) -> list[str]:
        return self.out("rev-list", *args).split()

    def update_ref(
        self, ref: str, new: str, old: str | None = None, message: str = "carry"
    ) -> None:
        args = ["update-ref", "-m", message, ref, new]
        if old is not None:
            args.append(old)
        self.run(*args)

    def delete_ref(self, ref: str) -> None:
        self.run("update-ref", "-d", ref, check=False)

    def for_each_ref(self, pattern: str, fmt: str = "%(refname)") -> list[str]:
        return [line for line in self.out("for-each-ref", f"--format={fmt}", pattern).splitlines()]

    def tags(self, pattern: str) -> list[str]:
        return self.out("tag", "--list", pattern, "--sort=v:refname").split()

    def fetch(self, remote: str) -> None:
        self.run("fetch", "--quiet", "--tags", remote)

    def push(self, remote: str, commit: str, branch: str, lease: str | None) -> None:
        """Push with a lease, so a branch someone else moved is never overwritten."""
        lease_arg = f"--force-with-lease=refs/heads/{branch}:{lease or ''}"
        self.run("push", "--quiet", "--porcelain", lease_arg, remote,
                 f"{commit}:refs/heads/{branch}")

    def remote_head(self, remote: str, branch: str) -> str | None:
        out = self.out("ls-remote", remote, f"refs/heads/{branch}")
        return out.split()[0] if out else None

    def fetch_refspec(self, remote: str, refspec: str) -> None:
        self.run("fetch", "--quiet", "--no-tags", remote, refspec)

    def remotes(self) -> list[str]:
        return self.out("remote").split()

    # -- objects ---------------------------------------------------------------------------

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

    def hash_object(self, data: bytes, kind: str = "blob") -> str:
        return self.out("hash-object", "-w", "-t", kind, "--stdin", input=data)

    # -- patches ---------------------------------------------------------------------------

    def format_patch(self, base: str, head: str) -> list[tuple[str, bytes]]:
        """Every commit of base..head as (sha, format-patch bytes), oldest first, one process.

        git writes each patch to its own numbered file: a stream would have to be split on
        `From <sha>` lines, which a commit message can hold too.
        """
        with tempfile.TemporaryDirectory(prefix="carry-fp-") as tmp:
            self.run(*_STABLE_CONFIG, "format-patch", "-o", tmp, "--numbered-files",
                     *FORMAT_PATCH_ARGS, f"{base}..{head}")
            out = []
            for f in sorted(Path(tmp).iterdir(), key=lambda p: int(p.name)):
                data = f.read_bytes()
                if not data:
                    continue  # a commit that changes nothing: the caller names it
                m = _FROM_LINE.match(data)
                if m is None:
                    raise GitError(f"git format-patch wrote {f.name} without its From line")
                out.append((m.group(1).decode(), data))
            return out

    def diff_patch_ids(self, diffs: Sequence[bytes]) -> list[str | None]:
        """The patch-id of each diff (None for one with no change), in one process."""
        stream = b"".join(b"commit %040d\n" % i + d for i, d in enumerate(diffs))
        ids: list[str | None] = [None] * len(diffs)
        for pid, tag in self.patch_ids(stream):
            ids[int(tag)] = pid
        return ids

    def patch_ids(self, diff_stream: bytes) -> list[tuple[str, str]]:
        """(patch-id, commit) pairs for a `git log -p` or format-patch stream."""
        out = self.run("patch-id", "--stable", input=diff_stream).stdout.decode()
        pairs = []
        for line in out.splitlines():
            pid, _, commit = line.partition(" ")
            pairs.append((pid, commit))
        return pairs

    def log_patches(self, rev_range: str, *extra: str) -> bytes:
        return self.run(
            *_STABLE_CONFIG, "log", "-p", "--no-merges", "--no-color", "--format=commit %H",
            "--full-index", "--binary", *extra, rev_range,
        ).stdout

    # -- trees, indexes and commits without a worktree --------------------------------------

    @contextmanager
    def temp_index(self, tree: str | None = None) -> Iterator[dict[str, str]]:
        """A private index file, so plumbing never touches the user's index or worktree."""
        where = self.carry_dir()
        scratch.sweep(where, "carry-index-")  # what a killed run left
        fd, name = tempfile.mkstemp(prefix=scratch.prefix("carry-index-"), dir=str(where))
        os.close(fd)
        os.unlink(name)
        env = {"GIT_INDEX_FILE": name}
        try:
            if tree:
                self.run("read-tree", tree, env=env)
            yield env
        finally:
            for suffix in ("", ".lock"):
                with suppress(FileNotFoundError):
                    os.unlink(name + suffix)

    def apply_cached(self, patch: bytes, env: Mapping[str, str], three_way: bool = False) -> None:
        args = ["apply", "--cached", "--whitespace=nowarn", "--allow-empty"]
        if three_way:
            args.append("--3way")
        self.run(*args, input=patch, env=env)

    def write_tree(self, env: Mapping[str, str]) -> str:
        return self.out("write-tree", env=env)

    def commit_tree(
        self,
        tree: str,
        parents: Iterable[str],
        message: bytes,
        author: Ident,
        committer: Ident | None = None,
        encoding: str | None = None,
    ) -> str:
        """A commit with an exact author and message; the committer is the running user.

        Written as bytes, not through `git commit-tree`: git's identity parsing strips the
        quotes and dots that end `"Quoted, Name" Jr.` and turns a `-0000` zone into `+0000`.
        With `encoding`, the commit gets that `encoding` header, as the original had.
        """
        return self.write_commit(tree, parents, message, author,
                                 committer or self.committer_ident(), encoding)

    def merge_tree(self, ours: str, theirs: str) -> MergeResult:
        """A worktree-free three-way merge; the merge base is found by git."""
        proc = self.run(
            "merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs,
            ok_codes=(0, 1),
        )
        lines = proc.stdout.decode("utf-8", "replace").splitlines()
        return MergeResult(lines[0], proc.returncode == 0, tuple(x for x in lines[1:] if x))

    def cherry_tree(self, commit: RawCommit, onto: str) -> MergeResult:
        """Replay one commit's change onto `onto` without a worktree (git 2.39 recipe).

        `merge-tree` in 2.39 has no --merge-base, so we graft onto's tree on the commit's own
        parent: the merge base of that graft and the commit is then exactly the parent.
        """
        onto_tree = self.rev_parse(onto, "tree")
        parent = commit.parents[0] if commit.parents else None
        if parent is None:
            raise CarryError(f"cannot replay root commit {commit.sha[:12]}")
        graft = self.commit_tree(
            onto_tree, [parent], b"carry graft\n", commit.author, commit.author
        )
        return self.merge_tree(graft, commit.sha)

    def tree_entries(self, treeish: str, paths: Sequence[str] = ()) -> list[str]:
        return self.out("ls-tree", "-r", "--name-only", treeish, "--", *paths).splitlines()

    def diff_names(self, a: str, b: str) -> list[str]:
        out = self.run("diff", "--name-only", "-z", "--no-renames", a, b).stdout
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def show_file(self, treeish: str, path: str) -> bytes | None:
        proc = self.run("show", f"{treeish}:{path}", check=False)
        return proc.stdout if proc.returncode == 0 else None

    # -- worktrees -------------------------------------------------------------------------

    def worktree_add(self, path: Path, commit: str) -> Repo:
        self.run("worktree", "add", "--detach", "--force", str(path), commit)
        return Repo(path.resolve())

    def worktree_remove(self, path: Path) -> None:
        self.run("worktree", "remove", "--force", "--force", str(path), check=False)
        self.run("worktree", "prune", check=False)

    def is_dirty(self) -> bool:
        return bool(self.out("status", "--porcelain", "--untracked-files=no"))

    # -- validation support (carry.validate) ----------------------------------------------

    def changed_files(self, a: str, b: str) -> list[str]:
        """The files `b` changes against `a` that still exist: what hooks get as --files."""
        out = self.run("diff", "--name-only", "-z", "--no-renames", "--diff-filter=d",
                       a, b).stdout
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def diff_check(self, a: str, b: str) -> tuple[bool, bytes]:
        """`git diff --check a b`: (clean, git's own report of whitespace errors)."""
        proc = self.run("diff", "--check", "--no-color", a, b, check=False)
        if proc.returncode not in (0, 1, 2):
            raise GitError(_complaint(("diff", "--check"), proc.stderr))
        return proc.returncode == 0, proc.stdout + proc.stderr

    def overlay_tree(self, base: str, source: str, paths: Sequence[str]) -> str:
        """`base`'s tree with `paths` as `source` has them (removed where it has none), built
        in a private index so no worktree or user index is touched."""
        listed = self.run("--literal-pathspecs", "ls-tree", "-z", "-r", source, "--",
                          *paths).stdout
        entries: dict[bytes, bytes] = {}
        for rec in listed.split(b"\0"):
            if rec:
                meta, _, path = rec.partition(b"\t")
                mode, _, sha = meta.split(b" ", 2)
                entries[path] = mode + b" " + sha
        info = b""
        for p in paths:
            key = p.encode("utf-8", "surrogateescape")
            info += (entries.get(key) or b"0 " + NULL_SHA.encode()) + b"\t" + key + b"\0"
        with self.temp_index(base) as env:
            self.run("update-index", "-z", "--index-info", input=info, env=env)
            return self.write_tree(env)

    # -- replay plumbing (carry.rebase, carry.upstream, carry.rangediff) --------------------

    def fork(self) -> Repo:
        """Another handle on this repository, with its own cat-file process, for a thread."""
        return Repo(self.path, _odb=self._odb)

    def committer_ident(self) -> Ident:
        """The running user as git itself would record them (config and GIT_COMMITTER_*)."""
        return Ident.parse(self.out("var", "GIT_COMMITTER_IDENT"))

    def _object_dir(self) -> Path | None:
        """Where loose objects go; None when git must write them itself (sha256 or shared
        repositories, whose formats and permissions carry does not reproduce)."""
        if self._odb is None:
            lines = self.out("rev-parse", "--git-path", "objects",
                             "--show-object-format").splitlines()
            shared = self.run("config", "--get", "core.sharedRepository", check=False).stdout
            objects = Path(lines[0]) if os.path.isabs(lines[0]) else self.path / lines[0]
            self._odb = (objects, len(lines) == 2 and lines[1] == "sha1" and not shared.strip())
        return self._odb[0] if self._odb[1] else None

    def write_object(self, kind: str, body: bytes) -> str:
        """Store one object as a loose file exactly as git would, without starting a process:
        a replay writes two commits per patch, and a process each would double its cost."""
        objects = self._object_dir()
        if objects is None:
            return self.out("hash-object", "-w", "-t", kind, "--stdin", input=body)
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
        """commit-tree without the process: the message and identities go in byte-exact."""
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

    def replay_tree(self, commit: RawCommit, onto_tree: str) -> MergeResult:
        """`cherry_tree` with the graft written in-process: one git process per patch."""
        if not commit.parents:
            raise CarryError(f"cannot replay root commit {commit.sha[:12]}")
        graft = self.write_commit(onto_tree, commit.parents[:1], b"carry graft\n",
                                  commit.author, commit.author)
        return self.merge_tree(graft, commit.sha)

    def log_patch_ids(
        self, revs: Sequence[str], paths: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        """(patch-id, commit) for the non-merge commits of `revs` that touch `paths`: one
        `git log -p` piped into one `git patch-id --stable`, never a process per commit.

        `--full-diff` keeps each selected commit's whole diff, so its patch-id is the real one;
        a commit with the same patch-id as a patch touches the same paths, so the path limit
        loses no match while sparing git the diff of every unrelated commit.
        """
        cmd = ["git", *_STABLE_CONFIG, "--literal-pathspecs", "log", "-p", "--no-merges",
               "--no-color", "--format=commit %H", "--full-index", "--binary", "--full-diff",
               *revs, "--", *paths]
        with tempfile.TemporaryFile() as err:
            log = subprocess.Popen(cmd, cwd=str(self.path), stdout=subprocess.PIPE, stderr=err,
                                   stdin=subprocess.DEVNULL)
            assert log.stdout is not None
            pid = subprocess.run(["git", "patch-id", "--stable"], cwd=str(self.path),
                                 stdin=log.stdout, capture_output=True)
            log.stdout.close()
            if log.wait() != 0:
                err.seek(0)
                raise GitError(_complaint(("log",), err.read()))
        if pid.returncode != 0:
            raise GitError(_complaint(("patch-id",), pid.stderr))
        pairs = []
        for line in pid.stdout.decode().splitlines():
            pid_, _, commit = line.partition(" ")
            pairs.append((pid_, commit))
        return pairs

    def cherry_marked(self, ours: str, theirs: str, exclude: Sequence[str] = (),
                      jobs: int = 1, min_split: int = 2000) -> set[str]:
        """The commits on either side of `ours...theirs` (less what `exclude` reaches) whose
        patch has an equal on the other side: git's own `rev-list --cherry-mark`, which, like
        `git cherry`, compares header-only patch-ids first and diffs contents only on a
        collision. With `jobs` > 1 a long far side is cut at first-parent points and searched
        by that many processes at once, since the per-commit tree diffs are the whole cost."""
        nots = [f"^{x}" for x in exclude]
        cuts = [theirs]
        if jobs > 1:
            line = self.rev_list("--first-parent", theirs, "--not", ours, *exclude)
            if len(line) >= min_split:
                step = len(line) // jobs
                cuts = [line[i * step] for i in range(jobs)]
        cmds = []
        for i, cut in enumerate(cuts):
            stop = [f"^{cuts[i + 1]}"] if i + 1 < len(cuts) else []
            cmds.append(("rev-list", "--cherry-mark", "--no-merges", f"{ours}...{cut}", *stop,
                         *nots, "--"))
        marked: set[str] = set()
        for out in self.run_many(cmds):
            marked.update(ln[1:] for ln in out.decode().splitlines() if ln.startswith("="))
        return marked

    def run_many(self, cmds: Sequence[Sequence[str]]) -> list[bytes]:
        """Several git commands at once (stdout of each); a failure raises like `run`."""
        procs = [subprocess.Popen(["git", *c], cwd=str(self.path), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
                 for c in cmds]
        if len(procs) == 1:
            results = [procs[0].communicate()]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(procs)) as pool:
                results = list(pool.map(lambda p: p.communicate(), procs))
        for cmd, proc, (_, err) in zip(cmds, procs, results, strict=True):
            if proc.returncode != 0:
                raise GitError(_complaint(cmd, err))
        return [out for out, _ in results]

    def tree_items(self, tree: str) -> dict[bytes, tuple[bytes, str]]:
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
                     ) -> dict[bytes, tuple[tuple[bytes, str] | None, tuple[bytes, str] | None]]:
        """The entries below directories that differ between trees `a` and `b` ("" for
        none), found in-process: subtrees with equal ids are never read. A path that is a
        file on one side and a directory on the other raises."""
        if a == b:
            return {}
        ia = self.tree_items(a) if a else {}
        ib = self.tree_items(b) if b else {}
        out: dict[bytes, tuple[tuple[bytes, str] | None, tuple[bytes, str] | None]] = {}
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

    def tree_lookup(self, tree: str, path: bytes) -> tuple[bytes, str] | None:
        *dirs, name = path.split(b"/")
        for d in dirs:
            entry = self.tree_items(tree).get(d)
            if entry is None or entry[0] != b"40000":
                return None
            tree = entry[1]
        return self.tree_items(tree).get(name)

    def edit_tree(self, tree: str | None,
                  changes: Mapping[bytes, tuple[bytes, str] | None]) -> str | None:
        """`tree` with each path set to (mode, sha) or removed (None), the new trees written
        in-process; None for a tree left empty. A change that would turn a file into a
        directory raises, so that callers fall back to git's own index handling."""
        items = dict(self.tree_items(tree)) if tree else {}
        nested: dict[bytes, dict[bytes, tuple[bytes, str] | None]] = {}
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

    def apply_sparse(self, diff: bytes) -> tuple[dict[bytes, tuple[bytes, str]],
                                                  dict[bytes, tuple[bytes, str]]]:
        """(before, after) for one patch: the entries it reads, as its own `index` lines name
        them (`git apply --build-fake-ancestor`), and the entries `git apply --cached` leaves
        in that small index. No index of the whole tree is read or written, which is what
        makes committing a patch cheap in a repository of 100k files."""
        fd, name = tempfile.mkstemp(prefix="carry-sparse-")
        os.close(fd)
        os.unlink(name)
        env = {"GIT_INDEX_FILE": name}
        try:
            self.run("apply", f"--build-fake-ancestor={name}", "--numstat", "-", input=diff)
            before = self._index_entries(env) if os.path.exists(name) else {}
            self.run("apply", "--cached", "--whitespace=nowarn", "--allow-empty", "-",
                     input=diff, env=env)
            return before, self._index_entries(env)
        finally:
            for suffix in ("", ".lock"):
                with suppress(FileNotFoundError):
                    os.unlink(name + suffix)

    def _index_entries(self, env: Mapping[str, str]) -> dict[bytes, tuple[bytes, str]]:
        out = self.run("ls-files", "--stage", "-z", env=env).stdout
        entries = {}
        for rec in out.split(b"\0"):
            if rec:
                meta, _, path = rec.partition(b"\t")
                mode, sha, _stage = meta.split(b" ")
                entries[path] = (mode, sha.decode())
        return entries

    def grep_log(self, revs: Sequence[str], needles: Sequence[str]) -> list[str]:
        """Commits of `revs`, merges too, whose message holds any needle as a fixed string;
        git does the search over the whole range in one process."""
        if not needles:
            return []
        greps = [f"--grep={n}" for n in needles]
        return self.out("log", "--fixed-strings", "--format=%H", *greps, *revs, "--").split()

    def changed_paths(self, *revs: str) -> list[str]:
        """Every path the commits of `revs` touch (both sides of a rename), in one process."""
        out = self.run("log", "--format=", "--name-only", "--no-renames", "-z", *revs,
                       "--").stdout
        return sorted({p.decode("utf-8", "surrogateescape")
                       for p in out.split(b"\0") if p.strip(b"\n")})

    def commits_touching(self, since: str, until: str, paths: Sequence[str],
                         limit: int = 50) -> list[LogEntry]:
        """The commits of `since..until` (newest first) that touched any of `paths`: what moved
        under a patch that no longer applies. Merges are left out; their sides are listed."""
        if not paths:
            return []
        out = self.run("log", "--no-merges", f"--max-count={limit}",
                       "--format=%H%x00%an <%ae>%x00%aI%x00%s%x00", f"{since}..{until}", "--",
                       *paths).stdout.decode("utf-8", "replace")
        fields = out.split("\0")
        return [LogEntry(*(f.strip() for f in fields[i:i + 4]))
                for i in range(0, len(fields) - 4, 4)]

    def version_tags(self, pattern: str) -> list[str]:
        """Tags matching `pattern`, oldest version first; a release candidate sorts before
        its release, so `v1.2.0` is newer than `v1.2.0rc1`."""
        cfg: list[str] = []
        for suffix in ("rc", "-rc", ".rc", "dev", ".dev", "-dev", "a", "b", "-alpha", "-beta"):
            cfg += ["-c", f"versionsort.suffix={suffix}"]
        return self.out(*cfg, "tag", "--list", pattern, "--sort=v:refname").split()

    def cherry_pick_no_commit(self, commit: str) -> list[str]:
        """Apply `commit` in this worktree with git's own conflict markers and no commit;
        returns the conflicted paths (none when it applied)."""
        proc = self.run("cherry-pick", "--no-commit", commit, check=False)
        unmerged = self.unmerged_paths()
        if proc.returncode != 0 and not unmerged:
            raise GitError(_complaint(("cherry-pick",), proc.stderr or proc.stdout))
        return unmerged

    def unmerged_paths(self) -> list[str]:
        out = self.run("ls-files", "--unmerged", "-z").stdout
        names = {rec.partition(b"\t")[2].decode("utf-8", "surrogateescape")
                 for rec in out.split(b"\0") if rec}
        return sorted(names)

    def stage_tracked(self) -> str:
        """Stage every tracked file as it is now (resolving conflicts) and write the tree;
        untracked files stay out, as with `git rebase --continue`."""
        self.run("add", "--update", "--", ".")
        return self.out("write-tree")

    def set_ref(self, ref: str, new: str | None, old: str | None,
                message: str = "carry") -> None:
        """Move, create (old None) or delete (new None) `ref`, only if it still holds `old`."""
        expect = old or NULL_SHA
        if new is None:
            self.run("update-ref", "-m", message, "-d", ref, expect)
        else:
            self.run("update-ref", "-m", message, ref, new, expect)

    def reflog_subjects(self, ref: str, limit: int = 20) -> list[str]:
        """The latest reflog messages of `ref`, newest first (none when it keeps no log)."""
        proc = self.run("reflog", "show", f"-{limit}", "--format=%gs", ref, "--", check=False)
        return proc.stdout.decode("utf-8", "replace").splitlines() if proc.returncode == 0 else []

    def range_diff(self, *args: str, color: bool = False) -> str:
        flag = "--color=always" if color else "--no-color"
        return self.run("range-diff", flag, *args).stdout.decode("utf-8", "replace")


def mailinfo(mail: bytes) -> tuple[dict[str, str], bytes, bytes]:
    """Split one mail with git's own parser into (headers, message body, diff).

    `-k` keeps the subject whole: vLLM subjects start with tags like `[BugFix]` that plain
    mailinfo would strip as if they were `[PATCH]`.
    """
    with tempfile.TemporaryDirectory(prefix="carry-mi-") as tmp:
        msg, patch = Path(tmp, "msg"), Path(tmp, "patch")
        proc = subprocess.run(
            ["git", "mailinfo", "-k", "--encoding=UTF-8", "--no-scissors", "--quoted-cr=nowarn",
             str(msg), str(patch)],
            input=mail, capture_output=True, cwd=tmp,
        )
        if proc.returncode != 0:
            raise GitError(_complaint(("mailinfo",), proc.stderr))
        headers: dict[str, str] = {}
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            key, sep, value = line.partition(": ")
            if sep:
                headers[key] = value
        return headers, msg.read_bytes(), patch.read_bytes()


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


def user_ident(repo: Repo) -> tuple[str, str] | None:
    name = repo.run("config", "user.name", check=False).stdout.decode().strip()
    email = repo.run("config", "user.email", check=False).stdout.decode().strip()
    name = os.environ.get("GIT_COMMITTER_NAME", name)
    email = os.environ.get("GIT_COMMITTER_EMAIL", email)
    return (name, email) if name and email else None


def _complaint(args: Sequence[str], stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    useful = next(
        (ln for ln in lines if ln.startswith(("fatal:", "error:"))), lines[0] if lines else ""
    )
    cmd = next((a for a in args if not a.startswith("-") and "=" not in a), "git")
    return f"git {cmd} failed: {useful or 'no output'}"
