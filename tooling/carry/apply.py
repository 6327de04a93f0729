"""Materialise a series as commits, with no worktree: a private index, `git apply --cached`,
`write-tree` and `commit-tree` with each patch's exact author and message."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from carry import patches as patchmod
from carry.errors import CarryError
from carry.git import GitError, Ident, Repo
from carry.series import Series


@dataclass(frozen=True)
class Applied:
    file: str
    subject: str
    author: str
    commit: str


@dataclass(frozen=True)
class ApplyResult:
    series: str
    onto: str
    branch: str
    head: str
    patches: list[Applied]


def load_patches(series: Series) -> list[patchmod.Patch]:
    return [patchmod.load(p.path, p.number) for p in series.patches()]


def materialize(
    repo: Repo,
    patches: list[patchmod.Patch],
    onto: str,
    committer: Ident | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[str]:
    """Commit each patch on top of the last; returns the new commits, oldest first.

    `committer=None` means the running user, as for user-facing output. Passing a fixed
    committer makes the result deterministic, which lets callers cache it under a ref.
    """
    commits: list[str] = []
    parent = repo.rev_parse(onto)
    with repo.temp_index(parent) as env:
        for i, patch in enumerate(patches, 1):
            if progress:
                progress(i, len(patches), patch.file)
            try:
                repo.apply_cached(patch.diff, env)
            except GitError as exc:
                raise CarryError(
                    f"{patch.file} does not apply onto {onto[:12]}: {exc}",
                    hint="carry rebase replays with a three-way merge",
                ) from None
            tree = repo.write_tree(env)
            parent = repo.commit_tree(tree, [parent], patch.message, patch.author, committer,
                                      encoding=patch.encoding)
            commits.append(parent)
    return commits


def checked_out_at(repo: Repo, ref: str) -> str | None:
    """The worktree that has `ref` checked out, if any: moving it would strand its files."""
    current = None
    for line in repo.out("worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            current = line[9:]
        elif line == f"branch {ref}":
            return current
    return None


def prepare_branch(repo: Repo, branch: str, force: bool) -> tuple[str, str | None]:
    """Check, before any work, that `branch` may be written; returns (ref, old value)."""
    ref = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
    if repo.run("check-ref-format", ref, check=False).returncode != 0:
        raise CarryError(f"not a valid branch name: {branch!r}")
    old = repo.try_rev_parse(ref) if repo.ref_exists(ref) else None
    if old and not force:
        raise CarryError(f"branch {branch!r} already exists in {repo.path}",
                         hint="pass --force to move it")
    where = checked_out_at(repo, ref) if old else None
    if where:
        raise CarryError(f"branch {branch!r} is checked out in {where}; carry will not move it")
    return ref, old


def run(series: Series, repo: Repo, onto: str, branch: str, force: bool,
        progress: Callable[[int, int, str], None] | None = None) -> ApplyResult:
    ref, old = prepare_branch(repo, branch, force)
    onto_sha = repo.rev_parse(onto)
    plist = load_patches(series)
    if not plist:
        raise CarryError(f"series {series.name} has no patches yet", hint="run carry import")
    commits = materialize(repo, plist, onto_sha, progress=progress)
    repo.update_ref(ref, commits[-1], old or "0" * 40, message=f"carry apply {series.name}")
    applied = [Applied(p.file, p.subject, p.author.name, c)
               for p, c in zip(plist, commits, strict=True)]
    return ApplyResult(series.name, onto_sha, ref, commits[-1], applied)
