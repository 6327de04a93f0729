"""One writer at a time: a lock per series and one per repository for rebases.

A command that writes a series holds its lock (`.git/carry/locks/series-NAME-*.lock` of the
series checkout, else `series/.NAME.lock`) from the moment it reads the series until it has
written it, so two imports can never both read version 1 and both write
version 2. A rebase also holds `.git/carry/rebase.lock`: it moves branches and keeps its
state there. Locks are `flock`s, which the kernel drops when their holder dies, so a killed
run never leaves anything locked. The lock file is never written (a run that changes nothing
changes no byte of series/): the holder's pid comes from the kernel's table, /proc/locks.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path

from carry.base import untrusted
from carry.base.errors import CarryError
from carry.base.flock import flocked
from carry.git import Repo

_held: dict[str, int] = {}  # lock path -> depth: a command may take a lock it already holds


@contextmanager
def held(path: Path, what: str) -> Iterator[None]:
    """Hold the flock on `path`, or fail at once naming the pid that holds it."""
    key = str(path)
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    with flocked(path, what):
        _held[key] = 1
        try:
            yield
        finally:
            del _held[key]


def series_lock(root: Path, name: str) -> AbstractContextManager[None]:
    """The lock of series NAME (see `lock_path`)."""
    from carry.series.store import check_name

    check_name(name)
    if root.exists() and not root.is_dir():
        raise CarryError(f"--series-dir {root} is not a directory")
    return held(lock_path(root, name), f"series {name}")


def lock_path(root: Path, name: str) -> Path:
    """Where series NAME of the folder `root` is locked: under the git dir of the checkout
    that holds `root` (`.git/carry/locks/`), so `git status` there never lists a lock file,
    named by `root`'s real path as well, since one checkout may hold two series folders; a
    folder in no checkout keeps it beside the series, `root/.NAME.lock` (listings skip dot
    files)."""
    git_dir = _git_dir(root)
    if git_dir is None:
        return root / f".{name}.lock"
    where = hashlib.sha256(os.fsencode(root.resolve())).hexdigest()[:16]
    return git_dir / "carry" / "locks" / f"series-{name}-{where}.lock"


def _git_dir(root: Path) -> Path | None:
    """The git dir of the checkout holding `root`, found as git finds it (a `.git` folder, or
    a `.git` file naming one, in `root` or above) without starting git: a lock is taken
    before any git command, and costs none."""
    here = root.resolve()
    for folder in (here, *here.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            try:
                text = untrusted.read_text(dot, limit=4096) or ""
            except CarryError:
                return None
            target = text.strip().removeprefix("gitdir: ")
            if not text.startswith("gitdir: ") or not (folder / target).is_dir():
                return None
            return (folder / target).resolve()
    return None


@contextmanager
def for_rebase(root: Path, name: str, repo: Repo, dry_run: bool) -> Iterator[None]:
    """A rebase writes refs and its state (and the series, with --refresh); a dry run reads."""
    with ExitStack() as stack:
        if not dry_run:
            stack.enter_context(series_lock(root, name))
            stack.enter_context(held(repo.carry_dir() / "rebase.lock",
                                     f"repository {repo.path}"))
        yield
