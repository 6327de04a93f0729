"""Resuming like git: no series name needed when one rebase is stopped; with several, every
resume asks which and none acts on all; the hints print real paths and commands."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import CommitBuilder, git, run_carry, util


def _two_targets(up: CommitBuilder, series_root: Path) -> tuple[str, ...]:
    git(up.path, "checkout", "-q", "-b", "feature", "base")
    up.commit("Two: h10", {"src/util.py": util(h10=100)})
    up.checkout("main")
    up.commit("Upstream h10", {"src/util.py": util(h10=101)})
    up.branch("other")
    sd = ("--series-dir", str(series_root))
    assert run_carry("import", "demo", "--repo", str(up.path), "--range", "base..feature",
                     *sd).code == 0
    return sd


def test_continue_without_a_name_when_one_rebase_is_stopped(
        tmp_path: Path, upstream: CommitBuilder, series_root: Path) -> None:
    sd = _two_targets(upstream, series_root)
    assert run_carry("rebase", "demo", "--repo", str(upstream.path), "--onto", "main",
                     *sd).code == 1
    stop = run_carry("rebase", "--repo", str(upstream.path), "--resolve", *sd)  # the worktree
    assert stop.code == 1
    state = json.loads((upstream.path / ".git/carry/rebase/demo/main.json").read_text())
    wt = Path(state["worktree"])
    lines = stop.out.splitlines()
    at = lines.index(f"  resolve in {wt}")
    assert lines[at + 1] == \
        f"  then: carry rebase --repo {upstream.path} --continue --series-dir {series_root}"
    (wt / "src" / "util.py").write_text(util(h10=1000))
    # from the conflict worktree itself, with neither NAME, --repo nor --series-dir
    res = run_carry("rebase", "--continue", "--json", cwd=wt)
    assert res.code == 0, res.err
    [d] = json.loads(res.out)
    assert d["status"] == "applied" and upstream.rev("carry/demo/main") == d["head"]
    none = run_carry("rebase", "--repo", str(upstream.path), "--abort")
    assert none.code == 2 and "no carry rebase is in progress" in none.err
    noname = run_carry("rebase", "--repo", str(upstream.path), *sd)
    assert noname.code == 2 and "give the series NAME" in noname.err


def test_several_stopped_rebases_each_ask_which(
        tmp_path: Path, upstream: CommitBuilder, series_root: Path) -> None:
    sd = _two_targets(upstream, series_root)
    repo = ("--repo", str(upstream.path))
    stop = run_carry("rebase", "demo", *repo, "--onto", "main", "--onto", "other", *sd)
    assert stop.code == 1, stop.err
    states = sorted(p.name for p in (upstream.path / ".git/carry/rebase/demo").glob("*.json"))
    assert states == ["main.json", "other.json"]
    assert "--target main" in stop.out and "--target other" in stop.out
    for action in ("--continue", "--skip", "--abort"):
        for name in ((), ("demo",)):
            r = run_carry("rebase", *name, *repo, action, *sd)
            assert r.code == 2, (action, name, r.err)
            assert "2 carry rebases are stopped" in r.err and "--target other" in r.err
    assert sorted(p.name for p in (upstream.path / ".git/carry/rebase/demo").glob(
        "*.json")) == states  # none acted on all
    one = run_carry("rebase", *repo, "--abort", "--target", "other", *sd)
    assert one.code == 0, one.err
    status = json.loads(run_carry("status", "demo", *repo, "--json", *sd).out)
    [left] = status["series"][0]["stopped"]
    assert left["target"] == "main"
    assert left["next"] == (f"carry rebase --repo {upstream.path} --continue "
                            f"--series-dir {series_root}")
    assert run_carry("rebase", *repo, "--abort", *sd).code == 0
