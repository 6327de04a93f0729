"""Atomic writes. A file: a temporary file beside the target, fsynced, then `os.replace` and
its folder fsynced, so a reader (or a run after `kill -9`) sees the old file or the new one,
never half of one. A directory (a series): `write_dir`, staged beside it and exchanged whole.
Temporary names hold the pid, so a later run can tell a dead run's leftover.

Every byte goes through `redact` on its way to disk: a token or URL credential that reached a
report, a log, a ledger or a manifest (the output of the code under test, an error git
echoed) is masked in the file as it is on the terminal. Patch files are the one exception:
they are the commits byte for byte, so one that holds a token is refused, never altered."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from carry.base import redact
from carry.base.errors import CarryError


def write_bytes(path: Path, data: bytes) -> None:
    data = redact.scrub_bytes(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _beside(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)  # the rename itself, or a crash could bring the old file back


def _beside(path: Path) -> tuple[int, str]:
    """A new file `.NAME.<pid>.<random>` beside `path`, made as `tempfile.mkstemp` makes one
    (mode 0600, never an existing name or a link): importing tempfile cost each `--skip`
    more than writing its state."""
    while True:
        tmp = os.path.join(path.parent, f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}")
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                           os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue


def write_json(path: Path, data: Any, indent: int = 1) -> None:
    write_bytes(path, (json.dumps(data, indent=indent) + "\n").encode("utf-8"))


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def append_text(path: Path, text: str) -> None:
    """Append to a file carry does not own (`$GITHUB_STEP_SUMMARY`), scrubbed. A regular file
    only, opened without blocking: a FIFO with no reader would hold carry forever."""
    import stat

    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC,
                 0o644)
    with os.fdopen(fd, "ab") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CarryError(f"{path}: not a regular file; carry appends only to one")
        fh.write(redact.scrub_bytes(text.encode("utf-8")))


def _file_bytes(rel: str, data: bytes) -> bytes:
    if rel.endswith(".patch"):
        if redact.holds_secret(data):
            raise CarryError(f"{rel}: holds the value of a token carry was given; carry "
                             "writes no token to a series",
                             hint="remove the token from that commit, then import again")
        return data
    return redact.scrub_bytes(data)


# -- a whole directory, replaced in one step -------------------------------------------------

def refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise CarryError(f"{path}: is a symbolic link; carry follows no link out of a series "
                         "directory", hint="replace the link with the "
                         f"{'directory' if path.resolve().is_dir() else 'file'} itself")


def write_dir(root: Path, files: Mapping[str, bytes], dirs: Iterable[str],
              keep: Callable[[str], bool]) -> None:
    """Replace the directory `root` with one that holds `files` (by path relative to it), the
    folders `dirs`, and the entries of the old `root` whose names `keep` accepts.

    How a crash can never leave half of it: everything is written into a sibling staging
    directory, made durable, and only then exchanged with `root` in one rename
    (`renameat2(RENAME_EXCHANGE)`), so `root` names the old directory or the new one, whole.
    The one rule that matters is that the new data is on disk before the rename that makes it
    reachable; a rename orders nothing by itself, and after a crash the new names could point
    at empty files. `_flush` does that with one `syncfs(2)` for the whole staging directory
    rather than an fdatasync per file and an fsync per folder; the parent is fsynced after
    the exchange, so a finished write stays finished.

    The old entries that are kept (a version kept aside, the user's notes) are hard links,
    not copies: their bytes are on disk already and are not written again. The old directory
    then leaves with the staging one, so each kept file ends with one name again. A link
    among them is refused, never followed.
    """
    import shutil
    import tempfile

    from carry.base import scratch

    files = {rel: _file_bytes(rel, data) for rel, data in files.items()}
    stem = f".{root.name}.new-"
    root.parent.mkdir(parents=True, exist_ok=True)
    recover(root)
    scratch.sweep(root.parent, stem)
    tmp = Path(tempfile.mkdtemp(prefix=scratch.prefix(stem), dir=str(root.parent)))
    tmp.chmod(0o755)
    try:
        for d in dirs:
            (tmp / d).mkdir(parents=True, exist_ok=True)
        for extra in root.iterdir() if root.is_dir() else ():
            if keep(extra.name):
                _link(extra, tmp / extra.name)
        for rel, data in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as fh:
                fh.write(data)
        _flush(tmp)
        _swap_in(tmp, root)
        _fsync_dir(root.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def recover(root: Path) -> bool:
    """Put back the directory a writer killed inside `_swap_in`'s fallback left aside.

    Between the fallback's two renames `root` does not exist and its old contents sit at
    `.NAME.new-<pid>-*.old`; the sweep of dead writers' scratch would remove them. Whether
    it did: readers call it before they say a series is unknown."""
    from carry.base import scratch

    stem = f".{root.name}.new-"
    if root.exists() or not root.parent.is_dir():
        return False
    for entry in os.scandir(root.parent):
        if entry.name.endswith(".old") and entry.is_dir(follow_symlinks=False) and \
                scratch.maker_dead(entry.name, stem):
            os.rename(entry.path, root)
            return True
    return False


def _link(src: Path, dst: Path) -> None:
    import shutil

    for p in [src, *(src.rglob("*") if src.is_dir() and not src.is_symlink() else ())]:
        refuse_link(p)
    if src.is_dir():
        shutil.copytree(src, dst, copy_function=_link_file)
    else:
        _link_file(str(src), str(dst))


def _link_file(src: str, dst: str) -> None:
    import shutil

    try:
        os.link(src, dst)
    except OSError:  # a filesystem without hard links, or one that refuses this one
        shutil.copy2(src, dst)
        with open(dst, "rb") as fh:
            os.fsync(fh.fileno())


_OWN_FILES = contextvars.ContextVar("carry_sync_own_files", default=False)


@contextlib.contextmanager
def own_files_only() -> Iterator[None]:
    """Inside it, `write_dir` syncs the files and folders it wrote, one by one, instead of
    the whole filesystem: for the conflict path, where a worktree of thousands of files was
    just written and one `syncfs` would wait for all of them to reach the disk."""
    token = _OWN_FILES.set(True)
    try:
        yield
    finally:
        _OWN_FILES.reset(token)


@functools.cache
def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)  # the running process already has libc loaded


def _flush(d: Path) -> None:
    """Make all that `d` holds durable, as fsync on every file and folder in it would.

    One `syncfs(2)` writes back the dirty data and metadata of the filesystem `d` is on and
    waits for it: 51 small files took 2.2 ms against 5.5 ms for an fdatasync each plus an
    fsync per folder (bench/README.md). It flushes what other programs wrote to that
    filesystem too, so on a disk busy with someone else's writes it waits for those. Linux
    reports writeback errors through syncfs since 5.8. Without syncfs (not Linux, or a
    sandbox that does not implement it), or inside `own_files_only`, every file and folder
    is synced one by one.
    """
    import errno

    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fn = None if _OWN_FILES.get() else getattr(_libc(), "syncfs", None)
        if fn is not None:
            if fn(fd) == 0:
                return
            import ctypes

            err = ctypes.get_errno()
            if err not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                raise OSError(err, os.strerror(err), str(d))
    finally:
        os.close(fd)
    for p in d.rglob("*"):
        if p.is_file() and not p.is_symlink():
            with open(p, "rb") as fh:
                os.fsync(fh.fileno())
    for sub in [d, *(p for p in d.rglob("*") if p.is_dir() and not p.is_symlink())]:
        _fsync_dir(sub)


def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _swap_in(new: Path, root: Path) -> None:
    """Put `new` at `root`; the old contents end up at `new`, which the caller removes."""
    if not root.exists():
        os.rename(new, root)
        new.mkdir()
        return
    fn = getattr(_libc(), "renameat2", None)
    if fn is not None:
        rc = fn(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(root), _RENAME_EXCHANGE)
        if rc == 0:
            return
    # Fallback: two renames; a crash between them leaves the old copy beside the new one.
    old = new.with_name(new.name + ".old")
    os.rename(root, old)
    os.rename(new, root)
    os.rename(old, new)
