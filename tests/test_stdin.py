"""No git child of carry inherits its stdin. A commit with an empty message once
took its message from whatever was piped into `carry apply`, and an open stdin hung it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CommitBuilder, git


def test_an_empty_message_stays_empty_whatever_stdin_holds(upstream: CommitBuilder,
                                                           series_root: Path) -> None:
    b = upstream
    git(b.path, "checkout", "-q", "-b", "feature")
    b.commit("first\n", {"src/a.py": "A = 1\n"})
    b.commit(b"", {"src/b.py": "B = 1\n"})
    env = dict(os.environ, CARRY_SERIES_DIR=str(series_root))

    def carry(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "carry", *args], input=stdin, env=env,
                              capture_output=True, timeout=60)

    r = carry("import", "demo", "--repo", str(b.path), "--range", "base..feature",
              stdin=b"X from stdin\n")
    assert r.returncode == 0, r.stderr
    r = carry("apply", "demo", "--repo", str(b.path), "--onto", "base", "--branch", "carried",
              stdin=b"X from stdin\n")
    assert r.returncode == 0, r.stderr
    assert git(b.path, "log", "-1", "--format=%B", "carried") == ""
    assert git(b.path, "rev-parse", "carried^{tree}") == git(b.path, "rev-parse",
                                                             "feature^{tree}")
