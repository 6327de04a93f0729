"""Ctrl-C during `rebase --continue` (F16 #7): a SIGINT that lands after the new series
version is written and before it is tagged left the version untagged for good, since the
resumed `--continue` saw the version already written and did nothing more. The SIGINT is
real, sent to the carry process while git runs the series checkout's own
`post-index-change` hook, which carry's tagging triggers (it snapshots the series folder
into a temporary index just before `git tag`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import CommitBuilder, git, run_carry, util

HOOK = """#!/bin/sh
# blocks carry's tagging of v2 (once), so that the test can interrupt it there
if [ -e "$ARMED" ] && grep -q '^version = 2' series.toml 2>/dev/null; then
    rm -f "$ARMED"; : > "$REACHED"; sleep 30
fi
exit 0
"""


def test_ctrl_c_before_the_tag_is_finished_by_the_next_continue(
        upstream: CommitBuilder, series_root: Path, tmp_path: Path) -> None:
    git(series_root.parent, "init", "-q")  # versions are tagged in the series checkout
    git(upstream.path, "checkout", "-q", "-b", "feature", "base")
    upstream.commit("One: h1", {"src/util.py": util(h1=10)})
    upstream.commit("Two: h10", {"src/util.py": util(h1=10, h10=100)})
    upstream.checkout("main")
    args = ("--repo", str(upstream.path), "--series-dir", str(series_root))
    assert run_carry("import", "demo", "--range", "base..feature", *args).code == 0
    r = run_carry("edit", "demo", "1", "--json", *args)
    assert r.code == 0, r.err
    wt = Path(json.loads(r.out)["worktree"])
    (wt / "src/util.py").write_text(util(h1=12))
    git(wt, "commit", "-q", "-a", "--amend", "-m", "One: h1 is 12")
    hook = series_root.parent / ".git/hooks/post-index-change"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(HOOK)
    hook.chmod(0o755)
    armed, reached = tmp_path / "armed", tmp_path / "reached"
    armed.touch()
    proc = subprocess.Popen([sys.executable, "-m", "carry", "rebase", "--continue", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "ARMED": str(armed), "REACHED": str(reached)},
                            # as at a terminal: a run started in the background (`cmd &`, as
                            # CI may start the tests) inherits SIGINT ignored, and Python keeps
                            # an ignored SIGINT ignored
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for _ in range(600):
        if reached.exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert reached.exists(), proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "version = 2" in (series_root / "demo/series.toml").read_text()  # written...
    assert git(series_root.parent, "tag", "--list", "series/demo/v2") == ""  # ...not tagged
    again = run_carry("rebase", "--continue", "--json", *args)
    assert again.code == 0, again.err
    [done] = json.loads(again.out)
    assert done["refreshed"]["version"] == 2 and done["refreshed"]["tag"] == "series/demo/v2"
    shown = git(series_root.parent, "show", "series/demo/v2:series.toml")
    assert shown == (series_root / "demo/series.toml").read_text().strip()
    assert run_carry("rebase", "--continue", *args).code != 0  # nothing left in progress
