"""Names for carry's scratch files and folders that say which process made them.

A run killed with -9 cannot clean up, so every scratch name carries its maker's pid
(`.NAME.new-<pid>-*` beside a series, `carry-index-<pid>-*` in .git/carry) and the next run
removes those whose maker is dead. A live maker's scratch is never touched.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


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
    return name.startswith(stem) and bool(sep) and pid.isdigit() and not _alive(int(pid))


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
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed
