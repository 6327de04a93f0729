"""Names for carry's scratch files and folders that say which process made them.

A run killed with -9 cannot clean up, so every scratch name carries its maker's pid
(`.NAME.new-<pid>-*` beside a series, `carry-index-<pid>-*` in .git/carry) and the next run
removes those whose maker is dead. A live maker's scratch is never touched. The processes a
run starts are tied to it (`tie_to_parent`), so that none outlives a kill and goes on writing.
"""

from __future__ import annotations

import functools
import os
import signal
from pathlib import Path
from typing import Any

from carry.base import untrusted


@functools.cache
def _prctl() -> Any:
    import ctypes

    return getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)  # None: not Linux


def tie_to_parent(parent: int) -> None:
    """Run in a child (a git that writes a worktree, a replay worker that shares the series
    lock): the kernel kills it when `parent` dies. Call `_prctl()` in the parent first, so
    the child makes one call and loads nothing between fork and exec."""
    prctl = _prctl()
    if prctl is not None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the call above
        os._exit(1)


def tied_child() -> Any:
    """A `preexec_fn` that ties the child to this process."""
    _prctl()
    return functools.partial(tie_to_parent, os.getpid())


def prefix(stem: str) -> str:
    """`stem` plus this process's pid, for tempfile's `prefix=`."""
    return f"{stem}{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def maker_dead(name: str, stem: str) -> bool:
    """Whether `name` is `stem<pid>-...` of a process that is gone."""
    pid, sep, _ = name[len(stem):].partition("-")
    # ASCII digits, as many as a pid has: `²` or twenty digits (another user's file in /tmp)
    # would make int() or kill() raise.
    number = untrusted.ascii_int(pid, 10) if name.startswith(stem) and sep else None
    return number is not None and 0 < number < 2**31 and not _alive(number)


def sweep(directory: Path, stem: str) -> list[Path]:
    """Remove what dead processes left in `directory` under `stem<pid>-`; returns it."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not maker_dead(entry.name, stem):
            continue
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            import shutil  # only for a leftover: a sweep usually finds none

            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed
