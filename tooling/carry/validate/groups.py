"""A validation step's processes die with carry, the ones its own children start too.

pytest and pre-commit run the target's code, which may start processes of its own; a `kill -9`
of carry used to leave them all running and writing. Each step runs as the leader of a new
process group (and session), tied to carry by PDEATHSIG (`scratch.tied_child`). The kernel does
not pass that signal on to what the leader starts, so a watcher, a small process in a session of
its own, is told each group and kills every group still listed when carry's end of its pipe
closes: at the end of the validation, or when carry dies, even by `kill -9`. What a step leaves
running when it ends is killed then and there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

from carry.base import scratch
from carry.base.childenv import git_env

_WATCHER = """
import os, signal, sys
groups = set()
for line in sys.stdin:
    op, _, pgid = line.strip().partition(" ")
    (groups.add if op == "+" else groups.discard)(int(pgid))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


def _kill(pgid: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class Groups:
    """The process groups of one validation's steps, and their watcher (a context manager)."""

    def __init__(self) -> None:
        self._watcher: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Groups:
        # -I -S: carry's own interpreter, none of the environment's or site's imports
        self._watcher = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHER], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            env=git_env())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._watcher is not None and self._watcher.stdin is not None:
            with suppress(OSError):
                self._watcher.stdin.close()
            self._watcher.wait()

    def _tell(self, op: str, pgid: int) -> None:
        watcher = self._watcher
        if watcher is None or watcher.stdin is None:
            return
        with self._lock, suppress(OSError):  # a watcher that is gone cannot be helped
            watcher.stdin.write(f"{op} {pgid}\n".encode())
            watcher.stdin.flush()

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
            out: IO[Any]) -> int:
        """Run `argv` as the leader of a new group tied to carry; its exit code."""
        proc = subprocess.Popen(list(argv), cwd=str(cwd), env=dict(env), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True,
                                preexec_fn=scratch.tied_child())  # noqa: PLW1509
        self._tell("+", proc.pid)
        try:
            return proc.wait()
        finally:
            _kill(proc.pid)  # what the step left running (all of it, on an interrupt)
            proc.wait()
            self._tell("-", proc.pid)
