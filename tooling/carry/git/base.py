"""What every part of the git wrapper shares: the value types, the one way a git process is
started, and opening a repository.

Plumbing runs as subprocesses with bytes in and bytes out, so that messages, author names and
patch bodies pass through untouched. `_run` is private to the package: a caller outside
`carry.git` gets a named method, so the commands carry runs can be read in one place.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from carry.base import redact, scratch
from carry.base.childenv import git_env
from carry.base.errors import CarryError

NULL_SHA = "0" * 40
# Every value a caller gives goes after this, so that none is read as an option (a remote
# `--upload-pack=CMD` runs CMD); git 2.39 takes it in every command carry gives values to but
# range-diff and check-ref-format, which are given only checked values (and cherry-pick,
# which takes it but reads the revs after it as options still).
EOO = "--end-of-options"
COMMIT_ID = re.compile(r"[0-9a-f]{40}")  # what those two, and cherry-pick, are given
INDEX_PREFIX = "carry-index-"  # private index files, named with their maker's pid

# Options that make diff and format-patch bytes independent of the user's configuration, so
# that re-importing the same range writes the same bytes on any machine.
STABLE_CONFIG = (
    "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false",
    "-c", "format.headers=", "-c", "core.quotePath=true", "-c", "diff.algorithm=myers",
)


class GitError(CarryError):
    """A git command failed; carries git's own first line of complaint."""


def check_remote(remote: str, where: str = "--remote") -> str:
    """A remote as carry hands it to git: a configured name, a URL or a path, never an option
    (`--upload-pack=CMD` would run CMD) nor a value with a control character."""
    if not remote or remote.startswith("-") or not remote.isprintable():
        raise CarryError(f"{where} {remote!r} is not a git remote",
                         hint="name a remote of the repository, a URL or a path; it cannot "
                              "start with '-'")
    return remote


@dataclass(frozen=True)
class Ident:
    """An author or committer: name, email and the raw `<epoch> <tz>` date."""

    name: str
    email: str
    date: str

    @classmethod
    def parse(cls, raw: str) -> Ident:
        # Linear on any input: `(.*) <(.*)>` backtracks quadratically over a line of many
        # " <" (an ident is text a commit carries); the name ends at the last " <".
        who, _, date = raw.rpartition("> ")
        name, sep, email = who.rpartition(" <")
        if "\n" in raw or not sep or not re.fullmatch(r"[0-9]{1,20} [+-][0-9]{4}", date,
                                                      re.ASCII):
            raise GitError(f"cannot parse identity line {raw[:200]!r}")
        return cls(name, email, date)

    def line(self) -> str:
        return f"{self.name} <{self.email}> {self.date}"


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
    """A merge's tree, and its conflicted paths; `stages` each one's index entries (1 base,
    2 ours, 3 theirs) when the merge was asked for them (diff3 style, `-z`)."""

    tree: str
    clean: bool
    conflicts: tuple[str, ...]
    stages: dict[bytes, dict[int, tuple[bytes, str]]] = field(default_factory=dict,
                                                             compare=False)


@dataclass(frozen=True)
class LogEntry:
    sha: str
    author: str
    date: str  # ISO 8601, the author date
    subject: str


@dataclass
class Base:
    """A git repository on disk, addressed by its top-level (or bare) directory."""

    path: Path
    _catfile: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _odb: tuple[Path, bool] | None = field(default=None, repr=False)
    _trees: dict[str, dict[bytes, tuple[bytes, str]]] = field(default_factory=dict, repr=False)
    _bodies: dict[str, bytes] = field(default_factory=dict, repr=False)
    _commits: dict[str, RawCommit] = field(default_factory=dict, repr=False)
    _carry: Path | None = field(default=None, repr=False)
    _common: Path | None = field(default=None, repr=False)  # known when `open` asked for it
    # the last conflicting `replay_tree`: (graft, theirs) -> its diff3 tree and stages
    _conflicted: dict[tuple[str, str], tuple[str, dict[bytes, dict[int, tuple[bytes, str]]]]] = (
        field(default_factory=dict, repr=False))
    # each path's attributes as `git check-attr -a` gives them (`Merges.clean_merges`)
    _attrs: dict[bytes, bytes] = field(default_factory=dict, repr=False)

    def _run(
        self,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        ok_codes: Sequence[int] = (0,),
        cwd: Path | None = None,
        tied: bool = False,
    ) -> subprocess.CompletedProcess[bytes]:
        """`env` adds to `childenv.git_env` (git's own locating variables are never passed on).
        `tied`: the git child dies with carry (`scratch.tie_to_parent`), for commands that
        write a working tree: left running after a `kill -9`, it would go on writing after
        `carry rebase --abort` removed the worktree."""
        proc = subprocess.run(
            ["git", *args],
            cwd=str(cwd or self.path),
            input=input,
            # No git child ever reads carry's stdin: a command that wants input gets `input`,
            # every other one reads nothing (an open terminal or pipe never hangs it).
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            env=git_env(env),
            preexec_fn=scratch.tied_child() if tied else None,  # noqa: PLW1509
        )
        if check and proc.returncode not in ok_codes:
            raise GitError(complaint(args, proc.stderr or proc.stdout))
        return proc

    def _out(self, *args: str, **kw: object) -> str:
        return self._run(*args, **kw).stdout.decode("utf-8", "replace").strip()  # type: ignore[arg-type]

    def _run_many(self, cmds: Sequence[Sequence[str]]) -> list[bytes]:
        """Several git commands at once (stdout of each); a failure raises like `_run`."""
        env = git_env()
        procs = [subprocess.Popen(["git", *c], cwd=str(self.path), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
                 for c in cmds]
        if len(procs) == 1:
            results = [procs[0].communicate()]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(procs)) as pool:
                results = list(pool.map(lambda p: p.communicate(), procs))
        for cmd, proc, (_, err) in zip(cmds, procs, results, strict=True):
            if proc.returncode != 0:
                raise GitError(complaint(cmd, err))
        return [out for out, _ in results]

    @property
    def git_dir(self) -> Path:
        return Path(self._out("rev-parse", "--absolute-git-dir"))

    @property
    def common_dir(self) -> Path:
        if self._common is None:
            d = Path(self._out("rev-parse", "--git-common-dir"))
            self._common = d if d.is_absolute() else (self.path / d).resolve()
        return self._common

    def carry_dir(self) -> Path:
        """`.git/carry`, carry's own folder; the first call also removes the private index
        files that a killed run left there."""
        if self._carry is None:
            d = self.common_dir / "carry"
            d.mkdir(parents=True, exist_ok=True)
            scratch.sweep(d, INDEX_PREFIX)
            self._carry = d
        return self._carry


def open_path(path: str | Path) -> tuple[Path, Path]:
    """The directory a `Repo` is addressed by (the top level, or the git dir when bare), and
    the repository's common git dir (where refs, objects and `shallow` live)."""
    p = Path(path).expanduser()
    # Named as given, credentials masked before any normalising: Path() turns `https://x:T@h`
    # into `https:/x:T@h`.
    shown = redact.url(str(path))
    if not p.exists():
        raise CarryError(f"repository does not exist: {shown}")
    # --show-toplevel fails in a bare repository and inside .git, after the other four
    # answers are printed: one process either way.
    out = subprocess.run(
        ["git", "-C", str(p), "rev-parse", "--is-bare-repository", "--absolute-git-dir",
         "--show-object-format", "--git-common-dir", "--show-toplevel"],
        capture_output=True, stdin=subprocess.DEVNULL, env=git_env(),
    )
    lines = out.stdout.decode().splitlines()
    if len(lines) < 4 or lines[0] not in ("true", "false"):
        raise CarryError(f"not a git repository: {shown}")
    _, git_dir, object_format, common = lines[:4]
    if object_format != "sha1":
        # Patch files, the manifest and carry's object writer all name SHA-1 ids.
        raise CarryError(f"{shown} is a {object_format.upper().replace('SHA', 'SHA-')} "
                         "repository; carry supports SHA-1 repositories only")
    common_dir = (p / common).resolve()  # relative to p unless absolute
    if out.returncode != 0 or len(lines) < 5:  # bare, or inside .git itself
        return Path(git_dir).resolve(), common_dir
    return Path(lines[4]).resolve(), common_dir


def clone_bare(url: str, dest: Path) -> tuple[Path, Path]:
    """Clone a URL (bare, all refs), used when import is given a remote repository.

    Blobs are fetched on demand: format-patch reads only the series' own files, so a
    vLLM-sized history costs commits and trees, not every file ever written.
    """
    proc = subprocess.run(
        ["git", "clone", "--quiet", "--bare", "--filter=blob:none", EOO, url, str(dest)],
        capture_output=True, stdin=subprocess.DEVNULL, env=git_env())
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace").splitlines()
        why = next((ln[ln.index("fatal:"):] for ln in said if "fatal:" in ln), "git failed")
        raise CarryError(f"cannot clone {redact.url(url)}: {redact.url(why)}") from None
    try:
        return open_path(dest)
    except CarryError as exc:
        raise CarryError(str(exc).replace(str(dest), redact.url(url))) from None


def user_ident(where: Path) -> Ident:
    """The running user as git records a committer outside any repository (`where` is in
    none): GIT_COMMITTER_* from the environment, else user.* from the global config."""
    proc = subprocess.run(["git", "var", "GIT_COMMITTER_IDENT"], cwd=where,
                          capture_output=True, stdin=subprocess.DEVNULL, env=git_env())
    if proc.returncode != 0:
        raise GitError(complaint(("var",), proc.stderr))
    return Ident.parse(proc.stdout.decode("utf-8", "surrogateescape").strip())


def complaint(args: Sequence[str], stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    useful = next(
        (ln for ln in lines if ln.startswith(("fatal:", "error:"))), lines[0] if lines else ""
    )
    cmd = next((a for a in args if not a.startswith("-") and "=" not in a), "git")
    return f"git {cmd} failed: {useful or 'no output'}"
