"""One way to hold a lock file: a `flock` on a file opened without following a link, which
the kernel drops when its holder dies (a `kill -9` never leaves anything locked). Series,
repository, ledger and supersede locks all go through it."""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from carry.base.errors import CarryError


@contextmanager
def flocked(path: Path, what: str, wait: bool = False) -> Iterator[None]:
    """Hold the flock on `path` (made if missing). `wait`: take turns with the holder;
    otherwise fail at once, naming the pid that holds it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        why = "is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise CarryError(f"cannot lock {what}: {path}: {why}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = holder_of(fd)
            by = f"pid {holder}" if holder else "another carry process"
            raise CarryError(f"{what} is being changed by {by}",
                             hint="wait for it to finish, then run this again") from None
        yield
    finally:
        os.close(fd)


def holder_of(fd: int) -> str:
    """The pid holding the flock on `fd`'s file, from lines like
    `1: FLOCK  ADVISORY  WRITE 4242 fe:00:2310147 0 EOF` (waiters are marked `->`)."""
    st = os.fstat(fd)
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return ""
    for line in table.splitlines():
        words = line.split()
        if len(words) >= 6 and words[1] == "FLOCK" and words[5] == where:
            return words[4]
    return ""
