"""Killed runs leave scratch behind (`.NAME.new-*` beside a series, `carry-index-*` in
.git/carry); each name carries its maker's pid and the next run removes what a dead one left,
never what a live one is using."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import CommitBuilder, git, run_carry


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_the_next_run_cleans_what_a_dead_run_left(upstream: CommitBuilder, series_root: Path,
                                                  tmp_path: Path) -> None:
    # A binary change: carry leaves it to `git apply --cached`, so apply takes a private index
    # in .git/carry (a text patch it applies in-process needs no scratch, and sweeps nothing).
    upstream.commit("Change\n", {"src/core.bin": bytes(range(256))})
    upstream.branch("feature")
    dead, live = _dead_pid(), os.getpid()
    carry_dir = Path(git(upstream.path, "rev-parse", "--absolute-git-dir")) / "carry"
    carry_dir.mkdir()
    left = [series_root / f".demo.new-{dead}-k1ll3d", series_root / f".demo.new-{dead}-x.old"]
    for d in left:
        (d / "patches").mkdir(parents=True)
        (d / "series.toml").write_text("half written\n")
    indexes = [carry_dir / f"carry-index-{dead}-abc", carry_dir / f"carry-index-{dead}-abc.lock"]
    for f in indexes:
        f.write_bytes(b"DIRC")
    busy = [series_root / f".demo.new-{live}-busy", carry_dir / f"carry-index-{live}-busy"]
    busy[0].mkdir()
    busy[1].write_bytes(b"DIRC")
    other = series_root / ".other.new-1-x"  # another series' scratch: not this run's business
    other.mkdir()

    r = run_carry("import", "demo", "--repo", str(upstream.path), "--range", "base..feature",
                  "--series-dir", str(series_root))
    assert r.code == 0, r.err
    assert not any(p.exists() for p in left)
    # the patch no longer names a commit this repository has: applied, not taken from it
    (patch,) = (series_root / "demo" / "patches").iterdir()
    text = patch.read_bytes()
    patch.write_bytes(b"From " + b"1" * 40 + text[len(b"From ") + 40:])
    r = run_carry("apply", "demo", "--repo", str(upstream.path), "--onto", "base",
                  "--branch", "carried", "--series-dir", str(series_root))
    assert r.code == 0, r.err
    assert not any(p.exists() for p in indexes)
    assert all(p.exists() for p in busy) and other.exists()
    assert sorted(p.name for p in carry_dir.iterdir()) == [busy[1].name]
