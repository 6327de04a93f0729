"""The conflict bench (bench/bench_conflicts.py) keeps measuring what it claims: its generated
series conflicts where its design says and for the reason it says, and one round of the bench
(carry's CLI loop against git's) runs to its checks on a tiny repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import conflicts_repo as gen  # noqa: E402

TINY = gen.Params(files=120, dirs=10, history=5, upstream=12, patches=9, roots=1,
                  dependents=3, drops=1, seed=3)


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert not check or proc.returncode == 0, proc.stderr
    return proc


def test_the_series_conflicts_only_through_its_roots(tmp_path: Path) -> None:
    """Taking each patch's side of every conflict (`-X theirs`), the series applies on the
    moved upstream with no stop but its drops: roots conflict with upstream alone, and the
    dependents only because a conflicting patch before them was left out."""
    root, built = gen.ensure(TINY, tmp_path / "cache")
    assert built and gen.ensure(TINY, tmp_path / "cache") == (root, False)
    design = json.loads((root / "design.json").read_text())
    kinds = [p["kind"] for p in design["patches"]]
    assert kinds.count("root") == 1 and kinds.count("dependent") == 3 and kinds.count("drop") == 1
    for p in design["patches"]:
        if p["kind"] == "dependent":
            assert kinds[p["builds_on"] - 1] in ("root", "dependent")
            assert p["builds_on"] < p["number"]
    repo, wt = root / "repo", tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "--detach", str(wt), "refs/remotes/upstream/main")
    proc = git(wt, "cherry-pick", "-X", "theirs", "base..refs/remotes/fork/dev/bench",
               check=False)
    stops = 0
    while proc.returncode != 0:
        assert "is now empty" in proc.stderr + proc.stdout, proc.stderr
        stops += 1
        proc = git(wt, "cherry-pick", "--skip", check=False)
    assert stops == kinds.count("drop")
    # and without it, the same replay stops at every root and dependent
    git(wt, "reset", "-q", "--hard", "refs/remotes/upstream/main")
    proc = git(wt, "cherry-pick", "base..refs/remotes/fork/dev/bench", check=False)
    conflicts = 0
    while proc.returncode != 0:
        conflicts += "could not apply" in proc.stderr + proc.stdout
        proc = git(wt, "cherry-pick", "--skip", check=False)
    assert conflicts == kinds.count("root") + kinds.count("dependent")


def test_one_round_of_the_bench_passes_its_checks(tmp_path: Path) -> None:
    """carry's stop/--skip loop through the CLI and git's cherry-pick loop agree patch by
    patch and tree by tree, and carry's first call and dry run foresee every conflict."""
    args = [f"--{k}={v}" for k, v in vars(TINY).items()]
    proc = subprocess.run([sys.executable, str(BENCH / "bench_conflicts.py"), *args,
                           "--warmup", "0", "--repeat", "1", "--cache", str(tmp_path / "cache")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "round 1: carry" in proc.stdout
    assert "4 applied, 4 conflicts skipped, 1 dropped, same in both, trees equal" in proc.stdout
    assert "whole loop / git's whole loop" in proc.stdout
