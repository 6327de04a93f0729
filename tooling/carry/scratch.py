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


def sweep(directory: Path, stem: str) -> list[Path]:
    """Remove what dead processes left in `directory` under `stem<pid>-`; returns it."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        pid, sep, _ = entry.name[len(stem):].partition("-")
        if not entry.name.startswith(stem) or not sep or not pid.isdigit() or _alive(int(pid)):
            continue
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed
