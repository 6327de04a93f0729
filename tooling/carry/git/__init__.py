"""The one place that talks to git, split by concern the way StGit's `stupid` is: objects
(cat-file and in-process writes), refs, history (patches, patch-ids, merges), private indexes
and worktrees. Callers see one `Repo` and never a raw git command line: methods take named
values, never flags, and each value reaches git after `--end-of-options` (or is checked where
git takes none), so that no rev, ref, remote or path from a flag, a manifest, a ledger or the
forge is read as an option. Every git child gets `childenv.git_env`: git's own locating
variables (GIT_DIR, GIT_INDEX_FILE, ...) never steer it to another repository. Imports base
only."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Self

from carry.base.errors import CarryError
from carry.git.base import (
    INDEX_PREFIX,
    NULL_SHA,
    GitError,
    Ident,
    LogEntry,
    MergeResult,
    RawCommit,
    check_remote,
    clone_bare,
    open_path,
    user_ident,
)
from carry.git.history import (
    FORMAT_PATCH_ARGS,
    FROM_LINE,
    GRAFT_IDENT,
    History,
    PendingMerge,
    mailinfo,
    parse_changes,
)
from carry.git.index import ApplyError, Index
from carry.git.merges import Content
from carry.git.objects import Entry, parse_commit
from carry.git.refs import ANY, Refs, RefUpdate
from carry.git.worktrees import Worktrees

__all__ = [
    "ANY", "FORMAT_PATCH_ARGS", "FROM_LINE", "GRAFT_IDENT", "INDEX_PREFIX", "NULL_SHA",
    "ApplyError", "Content", "Entry", "GitError", "Ident", "LogEntry", "MergeResult",
    "PendingMerge", "RawCommit", "RefUpdate", "Repo", "check_remote", "mailinfo",
    "parse_changes", "parse_commit", "user_ident",
]


class Repo(Refs, History, Index, Worktrees):
    """A git repository on disk, addressed by its top-level (or bare) directory."""

    @classmethod
    def open(cls, path: str | Path) -> Self:
        top, common = open_path(path)
        return cls(top, _common=common)

    @classmethod
    def clone(cls, url: str, dest: Path) -> Self:
        top, common = clone_bare(url, dest)
        return cls(top, _common=common)

    def fork(self) -> Self:
        """Another handle on this repository, with its own cat-file process, for a thread."""
        return type(self)(self.path, _odb=self._odb, _common=self._common)

    def commit_ids(self, revs: Sequence[str]) -> list[str]:
        """Revisions resolved to commits in one cat-file exchange, not a rev-parse each (the
        same resolution; the commits are kept parsed). A rev cat-file cannot name is given to
        `rev_parse`, which says what is wrong with it."""
        if any(not rev or "\n" in rev or rev.startswith("-") for rev in revs):
            return [self.rev_parse(rev) for rev in revs]
        try:
            found = self._ask([f"{rev}^{{commit}}" for rev in revs])
        except CarryError:
            return [self.rev_parse(rev) for rev in revs]
        for sha, _, body in found:
            self._commits.setdefault(sha, parse_commit(sha, body))
        return [sha for sha, _, _ in found]

    def claim_branch(self, branch: str, force: bool = False,
                     writes: bool = True) -> tuple[str, str | None]:
        """Check, before any work, that carry may write `branch`; returns (ref, old value).

        One rule for every command: a tag or a ref outside refs/heads is never a branch; a
        branch checked out in a worktree never moves; an existing branch moves only with
        `force`, or when its reflog says carry itself wrote it last and it still holds that
        commit (a carry/ branch in a repository that keeps no reflog is trusted). A dry run
        (`writes` False) moves nothing, so a checked-out branch does not stop it."""
        ref = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
        if not ref.startswith("refs/heads/") or not self.valid_branch(ref):
            raise CarryError(f"not a valid branch name: {branch!r}",
                             hint="a branch lives under refs/heads/ and does not start with -")
        self._no_folder_clash(ref)
        old = self.try_rev_parse(ref) if self.ref_exists(ref) else None
        if old is None:
            return ref, None
        last = self.reflog(ref, 1)
        ours = bool(last and last[0][0] == old and last[0][1].startswith("carry")) or (
            not last and ref.startswith("refs/heads/carry/"))
        short = ref.removeprefix("refs/heads/")
        if not (force or ours):
            why = f"last written by {last[0][1]!r}" if last else "with no reflog entry by carry"
            raise CarryError(f"branch {short!r} already exists; {short} is at {old[:12]}, not "
                             f"where carry last wrote it ({why}); carry will not overwrite it",
                             hint="pass --force to move it, or pick another --branch")
        where = self.worktree_of(ref) if writes else None
        if where:
            raise CarryError(f"{short} is checked out in {where}; carry will not move it under "
                             "a worktree", hint="pass --branch with another name")
        return ref, old

    def _no_folder_clash(self, ref: str) -> None:
        """git keeps `a/b` and `a/b/c` as a file and a folder: one cannot be made while the
        other exists, and git says only "cannot lock ref" after the work. Said before it."""
        parts = ref.split("/")
        above = [p for p in ("/".join(parts[:i]) for i in range(3, len(parts)))
                 if self.ref_exists(p)]
        below = self.for_each_ref(f"{ref}/")
        clash = (above or below)[:1]
        if not clash:
            return
        short, other = ref.removeprefix("refs/heads/"), clash[0].removeprefix("refs/heads/")
        raise CarryError(f"branch {short!r} cannot be written while branch {other!r} exists "
                         "(git keeps a branch and the branches under its name apart)",
                         hint=f"pick another --branch, such as {short}/tip" if not above
                         else f"pick another --branch, or move {other} aside: "
                         f"git branch -m {other} {other}/tip")
