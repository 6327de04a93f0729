"""History and patches: format-patch, patch-ids, searches over ranges and diffs (the merges
the replay is built on are in `merges`). Nothing here runs a process per commit:
a range is always one `git log` or `rev-list`, piped where it needs a second tool."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from carry.base.childenv import git_env
from carry.git.base import (
    COMMIT_ID,
    EOO,
    STABLE_CONFIG,
    GitError,
    LogEntry,
    complaint,
)
from carry.git.merges import GRAFT_IDENT, Merges, PendingMerge
from carry.git.objects import Entry

FROM_LINE = re.compile(rb"^From ([0-9a-f]{40}) Mon Sep 17 00:00:00 2001$", re.M)

# Options that make format-patch bytes independent of the user's configuration.
FORMAT_PATCH_ARGS = (
    "-k", "--no-signature", "--no-notes", "--no-thread", "--no-attach", "--no-cover-letter",
    "--encode-email-headers", "--full-index", "--binary", "--find-renames", "--no-color",
    "--src-prefix=a/", "--dst-prefix=b/", "--stat=72", "--no-signoff", "--no-add-header",
    "--no-to", "--no-cc", "--no-from", "--no-base", "--no-force-in-body-from", "--no-numbered",
    "--pretty=email", "--encoding=UTF-8",
)


class History(Merges):
    def format_patch(self, base: str, head: str,
                     commits: Sequence[str] | None = None) -> list[tuple[str, bytes]]:
        """Every commit of base..head as (sha, format-patch bytes), oldest first, one process;
        a commit that changes nothing has no patch. `commits` is the range as rev-list gives
        it, oldest first (looked up when not given).

        git writes the patches to stdout, one blank line between two, and the stream is cut
        where the next commit's `From <sha> Mon Sep 17 00:00:00 2001` line starts. A message
        may hold such a line, but not for the commit that comes after it: that sha hashes
        this commit's own sha, so no patch can name it; an earlier one may be named, so a
        patch starts only at the position where the last one ended.
        """
        if commits is None:
            commits = self._out("rev-list", "--reverse", "--topo-order", EOO,
                                f"{base}..{head}").split()
        out = self._run(*STABLE_CONFIG, "format-patch", "--stdout", *FORMAT_PATCH_ARGS, EOO,
                        f"{base}..{head}").stdout
        marks = [b"From %s Mon Sep 17 00:00:00 2001\n" % sha.encode() for sha in commits]
        patches: list[tuple[str, bytes]] = []
        for k, start, end in _sections(out, marks):
            if k < 0:
                raise GitError(f"git format-patch wrote a patch for no commit of {base[:12]}.."
                               f"{head[:12]} at byte {start}")
            if end < len(out) and out[end - 2:end] != b"\n\n":
                raise GitError(f"git format-patch wrote no blank line after {commits[k][:12]}")
            patches.append((commits[k], out[start:end - 1 if end < len(out) else end]))
        return patches

    def show_commit(self, commit: str) -> bytes:
        """`git show COMMIT` as a user reads it, its message and diff (no pager, colour or
        external diff): what `git rebase --show-current-patch` prints."""
        return self._run("show", "--no-color", "--no-ext-diff", "--no-textconv", EOO, commit,
                         "--").stdout

    def diff_patch_ids(self, diffs: Sequence[bytes], verbatim: bool = False
                       ) -> list[str | None]:
        """The patch-id of each diff (None for one with no change), in one process;
        `verbatim` keeps whitespace, as `change_ids` does."""
        stream = b"".join(b"commit %040d\n" % i + d for i, d in enumerate(diffs))
        ids: list[str | None] = [None] * len(diffs)
        mode = "--verbatim" if verbatim else "--stable"
        out = self._run("patch-id", mode, input=stream).stdout.decode()
        for pid, _, tag in (line.partition(" ") for line in out.splitlines()):
            ids[int(tag)] = pid
        return ids

    def log_patch_ids(
        self, revs: Sequence[str], paths: Sequence[str] = (), no_walk: bool = False
    ) -> list[tuple[str, str]]:
        """(patch-id, commit) for the non-merge commits of `revs` (only those named, with
        `no_walk`) that touch `paths`: one `git log -p` piped into one
        `git patch-id --stable`, never a process per commit.

        `--full-diff` keeps each selected commit's whole diff, so its patch-id is the real one;
        a commit with the same patch-id as a patch touches the same paths, so the path limit
        loses no match while sparing git the diff of every unrelated commit.
        """
        import tempfile

        cmd = ["git", *STABLE_CONFIG, "--literal-pathspecs", "log", "-p", "--no-merges",
               "--no-color", "--format=commit %H", "--full-index", "--binary", "--full-diff",
               "--find-renames", "--no-ext-diff", "--no-textconv",
               *(["--no-walk"] if no_walk else []), EOO, *revs, "--", *paths]
        env = git_env()
        with tempfile.TemporaryFile() as err:
            log = subprocess.Popen(cmd, cwd=str(self.path), stdout=subprocess.PIPE, stderr=err,
                                   stdin=subprocess.DEVNULL, env=env)
            assert log.stdout is not None
            pid = subprocess.run(["git", "patch-id", "--stable"], cwd=str(self.path),
                                 stdin=log.stdout, capture_output=True, env=env)
            log.stdout.close()
            if log.wait() != 0:
                err.seek(0)
                raise GitError(complaint(("log",), err.read()))
        if pid.returncode != 0:
            raise GitError(complaint(("patch-id",), pid.stderr))
        pairs = []
        for line in pid.stdout.decode().splitlines():
            pid_, _, commit = line.partition(" ")
            pairs.append((pid_, commit))
        return pairs

    def change_ids(self, base: str, head: str) -> list[tuple[str, str]]:
        """(id, commit) for every commit of base..head that changes something, merges
        included, for telling whether one branch's changes are all in another.

        Whitespace counts (`git patch-id --verbatim`): in Python a dedent changes what runs,
        and `--stable` would call the two commits equal. A merge counts by what it adds to the
        automatic merge of its parents (`--remerge-diff`): a clean merge adds nothing of its
        own, while one that adds a file or resolves a conflict its own way is a change like
        any other. git makes no remerge-diff of an octopus, so each one gets an id only it
        has (its sha): it is contained in nothing but itself.
        """
        rng = f"{base}..{head}"
        log = self._run(*STABLE_CONFIG, "log", "-p", "--remerge-diff", "--no-color",
                        "--format=commit %H", "--full-index", "--binary", "--find-renames",
                        "--no-ext-diff", "--no-textconv", "--end-of-options", rng, "--").stdout
        out = self._run("patch-id", "--verbatim", input=log).stdout.decode()
        pairs = [(pid, sha) for pid, _, sha in (ln.partition(" ") for ln in out.splitlines())]
        octopus = self._out("rev-list", "--min-parents=3", "--end-of-options", rng).split()
        return pairs + [(f"octopus:{sha}", sha) for sha in octopus]

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
            line = self._out("rev-list", "--first-parent", EOO, theirs, f"^{ours}", *nots,
                             "--").split()
            if len(line) >= min_split:
                step = len(line) // jobs
                cuts = [line[i * step] for i in range(jobs)]
        cmds = []
        for i, cut in enumerate(cuts):
            stop = [f"^{cuts[i + 1]}"] if i + 1 < len(cuts) else []
            cmds.append(("rev-list", "--cherry-mark", "--no-merges", EOO, f"{ours}...{cut}",
                         *stop, *nots, "--"))
        marked: set[str] = set()
        for out in self._run_many(cmds):
            marked.update(ln[1:] for ln in out.decode().splitlines() if ln.startswith("="))
        return marked

    def grep_log(self, revs: Sequence[str], needles: Sequence[str]) -> list[str]:
        """Commits of `revs`, merges too, whose message holds any needle as a fixed string;
        git does the search over the whole range in one process."""
        if not needles:
            return []
        greps = [f"--grep={n}" for n in needles]
        return self._out("log", "--fixed-strings", "--format=%H", *greps, EOO, *revs,
                         "--").split()

    def diff_check(self, a: str, b: str) -> tuple[bool, bytes]:
        """`git diff --check a b`: (clean, git's own report of whitespace errors)."""
        proc = self._run("diff", "--check", "--no-color", EOO, a, b, check=False)
        if proc.returncode not in (0, 1, 2):
            raise GitError(complaint(("diff", "--check"), proc.stderr))
        return proc.returncode == 0, proc.stdout + proc.stderr

    def range_diff(self, old: tuple[str, str], new: tuple[str, str], color: bool = False,
                   creation_factor: int | None = None, patch: bool = True) -> str:
        """`git range-diff` of old base..head against new base..head, given as commit ids
        (range-diff takes no --end-of-options: only ids reach it). git refuses an empty range
        in the two-range form, so one is given in the three-argument form with its base.
        `creation_factor` is git's percentage (higher pairs a patch with a more changed
        version of itself); `patch=False` leaves out the inner diffs."""
        if not all(COMMIT_ID.fullmatch(x) for x in (*old, *new)):
            raise GitError(f"range-diff takes commit ids, not {old!r} {new!r}")
        if old[0] == old[1]:
            args = [new[0], new[0], new[1]]
        elif new[0] == new[1]:
            args = [old[0], old[1], old[0]]
        else:
            args = [f"{old[0]}..{old[1]}", f"{new[0]}..{new[1]}"]
        flags = ["--color=always" if color else "--no-color"]
        if creation_factor is not None:
            flags.append(f"--creation-factor={int(creation_factor)}")
        if not patch:
            flags.append("--no-patch")
        return self._run("range-diff", *flags, *args).stdout.decode("utf-8", "replace")

    def first_parent_names(self, since: str, until: str) -> list[tuple[str, set[bytes]]]:
        """The commits on `until`'s first-parent line after `since`, oldest first, each with
        the files it changes against its first parent (a rename at both names): the only
        commits at which a merge of those files can change. One `git log` of every name,
        which a caller filters: many paths as a pathspec cost more (git matches each name
        of each commit against every one: 74 ms for 99 paths over 212 commits, 17 ms for
        all)."""
        out = self._run(*STABLE_CONFIG, "log", "-z", "--first-parent", "--no-renames",
                        "--no-show-signature", "--name-only", "--format=%x01%H", until,
                        "--not", since).stdout
        found: list[tuple[str, set[bytes]]] = []
        for token in out.split(b"\0"):
            token = token.strip(b"\n")
            if token.startswith(b"\x01"):
                found.append((token[1:].decode(), set()))
            elif token and found:
                found[-1][1].add(token)
        return found[::-1]

    def commit_changes(self, commits: Sequence[str]
                       ) -> dict[str, dict[bytes, tuple[Entry | None, Entry | None]]]:
        """Each commit's changed entries against its first parent, (old, new) with None for
        absent, for many commits in one `git diff-tree --stdin`: what the replay needs to
        batch patches, without reading a tree per commit."""
        return parse_changes(self.commit_changes_raw(commits))

    def commit_changes_raw(self, commits: Sequence[str]) -> bytes:
        """`commit_changes` as git prints it (`parse_changes` reads it), for a cache."""
        if not commits:
            return b""
        return self._run("diff-tree", "-r", "-z", "--no-renames", "--stdin",
                         input=("\n".join(commits) + "\n").encode()).stdout

    def commit_diffs(self, commits: Sequence[str]) -> dict[str, bytes]:
        """Each commit's diff against its parent as `format_patch` writes it (the part
        `git mailinfo` calls the patch), for many commits in one `git diff-tree --stdin`:
        no diffstat, under half format-patch's cost (the fork's 53 patches: 0.09 s, 0.21 s).
        A commit that changes nothing, or whose output cannot be told apart, has no entry: a
        caller compares, never trusts."""
        if not commits:
            return {}
        out = self._run(*STABLE_CONFIG, "diff-tree", "--stdin", "-p", "--full-index", "--binary",
                        "--find-renames", "--no-color", "--no-ext-diff", "--no-textconv",
                        "--src-prefix=a/", "--dst-prefix=b/",
                        input=("\n".join(commits) + "\n").encode()).stdout
        marks = [f"{sha}\n".encode() for sha in commits]
        found: dict[str, bytes] = {}
        for k, start, end in _sections(out, marks, b"diff --git "):
            if k < 0:
                break
            found[commits[k]] = out[start + len(marks[k]):end]
        return found

    def changed_files(self, a: str, b: str, deleted: bool = False) -> list[str]:
        """The paths `b` changes against `a`; without `deleted`, only those that still exist
        (what hooks get as --files)."""
        only = () if deleted else ("--diff-filter=d",)
        out = self._run("diff", "--name-only", "-z", "--no-renames", *only, EOO, a, b).stdout
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def commits_touching(self, since: str, until: str, paths: Sequence[str],
                         limit: int = 50) -> list[LogEntry]:
        """The commits of `since..until` (newest first) that touched any of `paths`: what moved
        under a patch that no longer applies. Merges are left out; their sides are listed.
        `limit` 0 lists them all."""
        if not paths:
            return []
        count = (f"--max-count={limit}",) if limit else ()
        out = self._run("log", "--no-merges", *count,
                        "--format=%H%x00%an <%ae>%x00%aI%x00%s%x00", EOO, f"{since}..{until}",
                        "--", *paths).stdout.decode("utf-8", "replace")
        fields = out.split("\0")
        return [LogEntry(*(f.strip() for f in fields[k:k + 4]))
                for k in range(0, len(fields) - 4, 4)]

    def subjects(self, since: str, until: str) -> list[str]:
        """The subjects of the commits of `since..until` (merges left out, as
        `commits_touching` does), newest first."""
        out = self._run("log", "--no-merges", "--format=%s%x00", EOO, f"{since}..{until}",
                        "--").stdout.decode("utf-8", "replace")
        return [s.strip() for s in out.split("\0")[:-1]]

    def all_commits(self) -> list[tuple[str, str, str]]:
        """(commit, author email, subject) of every non-merge commit any ref but carry's own
        (refs/carry/*) reaches, newest first."""
        out = self._run("log", "--exclude=refs/carry/*", "--all", "--no-merges",
                        "--format=%H%x00%ae%x00%s").stdout.decode("utf-8", "replace")
        return [(a, b, c) for a, b, c in (line.split("\0", 2) for line in out.splitlines())]


def parse_changes(out: bytes) -> dict[str, dict[bytes, tuple[Entry | None, Entry | None]]]:
    found: dict[str, dict[bytes, tuple[Entry | None, Entry | None]]] = {}
    current: dict[bytes, tuple[Entry | None, Entry | None]] = {}
    tokens = iter(out.split(b"\0"))
    for token in tokens:
        token = token.strip(b"\n")
        if token.startswith(b":"):
            old_mode, new_mode, old_sha, new_sha, _ = token[1:].split(b" ")
            current[next(tokens)] = (
                None if old_mode == b"000000" else (old_mode, old_sha.decode()),
                None if new_mode == b"000000" else (new_mode, new_sha.decode()))
        elif len(token) == 40:
            current = found.setdefault(token.decode(), {})
    return found


def mailinfo(mail: bytes) -> tuple[dict[str, str], bytes, bytes]:
    """Split one mail with git's own parser into (headers, message body, diff).

    `-k` keeps the subject whole: vLLM subjects start with tags like `[BugFix]` that plain
    mailinfo would strip as if they were `[PATCH]`.
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="carry-mi-") as tmp:
        msg, patch = Path(tmp, "msg"), Path(tmp, "patch")
        proc = subprocess.run(
            ["git", "mailinfo", "-k", "--encoding=UTF-8", "--no-scissors", "--quoted-cr=nowarn",
             str(msg), str(patch)],
            input=mail, capture_output=True, cwd=tmp, env=git_env(),
        )
        if proc.returncode != 0:
            raise GitError(complaint(("mailinfo",), proc.stderr))
        headers: dict[str, str] = {}
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            key, sep, value = line.partition(": ")
            if sep:
                headers[key] = value
        return headers, msg.read_bytes(), patch.read_bytes()


__all__ = ["FORMAT_PATCH_ARGS", "FROM_LINE", "GRAFT_IDENT", "History", "PendingMerge"]


def _sections(out: bytes, marks: Sequence[bytes], then: bytes = b""
              ) -> Iterator[tuple[int, int, int]]:
    """(k, start, end) of each part of `out` that starts with `marks[k]` and runs to the line
    on which a later mark (followed by `then`) starts, or to the end; marks come in order,
    some may have no part. A part starts only where the last one ended, so a mark quoted
    inside a part (a message naming an earlier commit) cuts nothing. (-1, start, -1), last,
    where no mark starts."""
    pos, k = 0, 0
    while pos < len(out):
        while k < len(marks) and not out.startswith(marks[k], pos):
            k += 1
        if k == len(marks):
            yield -1, pos, -1
            return
        ends = (out.find(b"\n" + m + then, pos) for m in marks[k + 1:])
        end = next((e + 1 for e in ends if e != -1), len(out))
        yield k, pos, end
        pos, k = end, k + 1
