"""A conflict stops the rebase safely: versioned state, a worktree with real markers, and
--continue / --skip / --abort; a kill -9 at any moment followed by --abort changes nothing."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from carry.series import store as seriesmod
from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, kill_after, run_carry, util

MakeSeries = Callable[..., Any]


@pytest.fixture
def stopped(upstream: CommitBuilder, make_series: MakeSeries,
            series_root: Path) -> dict[str, Any]:
    """Three patches; upstream changed the lines of patch 2, so the rebase stops there."""
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    originals = [
        upstream.commit("One\n\nSigned-off-by: Toby Mao <toby@example.com>\n",
                        {"src/util.py": util(h1=11)}, author=TOBY),
        upstream.commit("Two: h10\n\nAssisted-by: OpenAI Codex\n"
                        "Signed-off-by: logprobz <logprobz@example.com>\n",
                        {"src/util.py": util(h1=11, h10=100)}, author=LOGPROBZ,
                        date="@1790000777 +0530"),
        upstream.commit("Three", {"src/core.py": "def f():\n    return 3\n"}, author=TOBY),
    ]
    upstream.checkout("main")
    upstream.commit("Upstream h10", {"src/util.py": util(h10=101)})
    make_series(upstream, "feature")
    return {"up": upstream, "root": series_root, "originals": originals,
            "args": ("rebase", "demo", "--repo", str(upstream.path), "--series-dir",
                     str(series_root))}


def _snapshot(repo: Path) -> dict[str, Any]:
    """Refs (but carry's content-addressed cache and the ref that keeps a stop's commits from
    gc), worktree bytes, index bytes, worktrees."""
    refs = [line for line in git(repo, "for-each-ref", "--format=%(refname) %(objectname)",
                                 ).splitlines()
            if not line.startswith(("refs/carry/cache/", "refs/carry/stops/"))]
    files = {}
    for p in sorted(repo.rglob("*")):
        if ".git" not in p.relative_to(repo).parts and p.is_file():
            files[str(p.relative_to(repo))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return {"refs": refs, "HEAD": git(repo, "symbolic-ref", "HEAD"), "files": files,
            "index": hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
            "worktrees": git(repo, "worktree", "list", "--porcelain")}


def _no_leftovers(repo: Path) -> None:
    carry = repo / ".git" / "carry"
    assert not list((carry / "rebase").rglob("*.json")) if (carry / "rebase").exists() else True
    assert not (repo.parent / f"{repo.name}.carry").exists()  # the conflict worktrees


def test_conflict_stops_with_state_worktree_and_report(stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    before = _snapshot(up.path)
    res = run_carry(*stopped["args"], "--onto", "main")
    assert res.code == 1, res.err
    assert "CONFLICT in 0002-Two-h10.patch" in res.out and "logprobz" in res.out
    assert "src/util.py" in res.out
    state_file = up.path / ".git" / "carry" / "rebase" / "demo" / "main.json"
    state = json.loads(state_file.read_text())
    assert state["version"] == 2 and state["phase"] == "conflict" and state["position"] == 1
    assert state["target"]["sha"] == up.rev("main") and state["branch_old"] is None
    assert [p["status"] for p in state["patches"]] == ["applied", "conflict", "pending"]
    wt = Path(state["worktree"])
    assert not wt.exists() and state["ready"] is False  # made when asked for: --resolve
    asked = run_carry(*stopped["args"], "--resolve")
    assert asked.code == 1 and f"resolve in {wt}" in asked.out, asked.out
    text = (wt / "src" / "util.py").read_text()
    assert "<<<<<<<" in text and "=======" in text and ">>>>>>>" in text
    assert git(wt, "status", "--porcelain").splitlines() == ["UU src/util.py"]
    # nothing the user had moved: the only new ref is carry's own cache
    after = _snapshot(up.path)
    assert after["refs"] == before["refs"] and after["files"] == before["files"]
    # --json reports the same stop, and a second rebase of the same target is refused
    again = run_carry(*stopped["args"], "--onto", "main")
    assert again.code == 2 and "already in progress" in again.err


def test_conflict_continue_keeps_author_date_message(stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    assert run_carry(*stopped["args"], "--onto", "main").code == 1
    assert run_carry(*stopped["args"], "--resolve").code == 1  # makes the worktree
    state = json.loads((up.path / ".git/carry/rebase/demo/main.json").read_text())
    wt = Path(state["worktree"])
    # still conflicted: --continue refuses and keeps everything
    refused = run_carry(*stopped["args"], "--continue")
    assert refused.code == 2 and "still has conflict markers" in refused.err
    assert wt.is_dir()
    (wt / "src" / "util.py").write_text(util(h1=11, h10=1001))
    res = run_carry(*stopped["args"], "--continue", "--json")
    assert res.code == 0, res.err
    [d] = json.loads(res.out)
    assert [p["status"] for p in d["patches"]] == ["applied", "applied", "applied"]
    assert d["patches"][1]["reason"] == "conflict resolved"
    branch = "refs/heads/carry/demo/main"
    assert up.rev(branch) == d["head"]
    two = d["patches"][1]["commit"]
    orig = git(up.path, "cat-file", "commit", stopped["originals"][1]).split("\n")
    new = git(up.path, "cat-file", "commit", two).split("\n")
    assert [ln for ln in new if ln.startswith("author ")] == [
        ln for ln in orig if ln.startswith("author ")]
    assert new[new.index(""):] == orig[orig.index(""):]  # the message, byte for byte
    assert any(ln.startswith("committer C O Mitter <committer@example.com>") for ln in new)
    assert git(up.path, "show", f"{two}:src/util.py") == util(h1=11, h10=1001).strip()
    assert git(up.path, "rev-parse", f"{two}^") == d["patches"][0]["commit"]
    _no_leftovers(up.path)
    assert "carry/worktrees" not in git(up.path, "worktree", "list")


def test_conflict_skip_leaves_the_patch_out(stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    assert run_carry(*stopped["args"], "--onto", "main").code == 1
    res = run_carry(*stopped["args"], "--skip", "--json")
    assert res.code == 0, res.err
    [d] = json.loads(res.out)
    assert [p["status"] for p in d["patches"]] == ["applied", "skipped", "applied"]
    assert git(up.path, "log", "--format=%s", "main..carry/demo/main").split("\n") == [
        "Three", "One"]
    assert git(up.path, "show", "carry/demo/main:src/util.py") == util(h1=11, h10=101).strip()
    _no_leftovers(up.path)


def test_conflict_abort_restores_everything(stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    # an older result that must survive, written as carry writes its branches
    git(up.path, "update-ref", "-m", "carry rebase demo onto base", "refs/heads/carry/demo/main",
        up.rev("base"))
    before = _snapshot(up.path)
    assert run_carry(*stopped["args"], "--onto", "main").code == 1
    res = run_carry(*stopped["args"], "--abort")
    assert res.code == 0, res.err
    assert "aborted" in res.out
    assert _snapshot(up.path) == before
    _no_leftovers(up.path)
    assert run_carry(*stopped["args"], "--abort").code == 2  # nothing left to abort


def test_continue_then_second_conflict_then_refresh(stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    git(stopped["root"].parent, "init", "-q")
    up.commit("Upstream f", {"src/core.py": "def f():\n    return 30\n"})
    assert run_carry(*stopped["args"], "--onto", "main", "--refresh").code == 1
    assert run_carry(*stopped["args"], "--resolve").code == 1  # makes the worktree
    state = json.loads((up.path / ".git/carry/rebase/demo/main.json").read_text())
    (Path(state["worktree"]) / "src/util.py").write_text(util(h1=11, h10=1001))
    res = run_carry(*stopped["args"], "--continue")
    assert res.code == 1 and "CONFLICT in 0003-Three.patch" in res.out
    state = json.loads((up.path / ".git/carry/rebase/demo/main.json").read_text())
    # the version the refresh starts from: v2, which recorded the resolution of 0002
    assert state["position"] == 2 and state["refresh"] == 2
    (Path(state["worktree"]) / "src/core.py").write_text("def f():\n    return 33\n")
    res = run_carry(*stopped["args"], "--continue")
    assert res.code == 0, res.err
    s = seriesmod.find(stopped["root"], "demo")
    # v2 and v3 recorded the two resolutions, v4 is the refresh
    assert s.manifest.version == 4 and s.manifest.base.commit == up.rev("main")
    assert "conflicts resolved in 0002, 0003" in s.manifest.changelog[-1].summary
    assert [p.name for p in s.patches()] == ["0001-One.patch", "0002-Two-h10.patch",
                                              "0003-Three.patch"]
    # the refreshed series now applies cleanly on its new base
    assert run_carry(*stopped["args"], "--onto", "main", "--branch", "again").code == 0


def test_a_conflict_forecasts_the_later_patches_that_conflict_too(
        stopped: dict[str, Any]) -> None:
    """Patch 2 stops the rebase; patch 3 conflicts with upstream as well. Both show at once,
    in the table and the JSON, without stopping twice to find out; a resume replays patch 3
    for real, and the forecast was right."""
    up: CommitBuilder = stopped["up"]
    up.commit("Upstream f", {"src/core.py": "def f():\n    return 30\n"})
    dry = run_carry(*stopped["args"], "--onto", "main", "--dry-run", "--json")
    assert dry.code == 1, dry.err
    [d] = json.loads(dry.out)
    assert [p["status"] for p in d["patches"]] == ["applied", "conflict", "would-conflict"]
    assert d["patches"][2]["forecast"] == ["src/core.py"] and d["patches"][1]["forecast"] == []
    table = run_carry(*stopped["args"], "--onto", "main", "--dry-run", "-v")
    assert table.code == 1
    assert "CONFLICT in 0002-Two-h10.patch" in table.out
    assert "0003-Three.patch would-conflict too, in src/core.py (by Toby Mao)" in table.out
    brief = run_carry(*stopped["args"], "--onto", "main")  # the summary and one line each
    assert brief.code == 1
    lines = brief.out.splitlines()
    assert "main: 1 applied, stopped at 0002 (1 more would conflict)" in lines
    assert "  CONFLICT in 0002-Two-h10.patch" in lines
    cause = up.rev("HEAD")[:12]
    assert f"  0003 would conflict since upstream {cause} 'Upstream f'" in lines
    state = json.loads((up.path / ".git/carry/rebase/demo/main.json").read_text())
    assert state["patches"][2]["status"] == "would-conflict"
    res = run_carry(*stopped["args"], "--skip")
    assert res.code == 1 and "CONFLICT in 0003-Three.patch" in res.out
    assert "would conflict" not in res.out and "main: 1 applied, 1 skipped, stopped at 0003" \
        in res.out.splitlines()


def test_state_of_another_version_is_refused(stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    assert run_carry(*stopped["args"], "--onto", "main").code == 1
    path = up.path / ".git/carry/rebase/demo/main.json"
    state = json.loads(path.read_text())
    path.write_text(json.dumps({**state, "version": 99}))
    res = run_carry(*stopped["args"], "--continue")
    assert res.code == 2 and "has version 99" in res.err


def _damage(state: dict[str, Any]) -> dict[str, Any]:
    """Eight ways a state file goes wrong, each a dict to write (or text, under "raw")."""
    head = state["head"]
    return {
        "unknown phase": {**state, "phase": "finalising"},
        "head not a commit name": {**state, "head": "HEAD~1"},
        "position past the end": {**state, "position": 99},
        "branch a tag": {**state, "branch": "refs/tags/v1.0"},
        "patch with an unknown status": {**state, "patches": [
            {**p, "status": "half"} for p in state["patches"]]},
        "patch entry not an object": {**state, "patches": ["0001"]},
        "field of the wrong type": {**state, "refresh": "yes", "head": head},
        "group entry not a branch": {**state, "group": [
            {"branch": "refs/tags/v1", "old": None, "head": head}]},
        "not JSON": {"raw": '{"version": 2, "phase": "confl'},
    }


@pytest.mark.parametrize("kind", ["unknown phase", "head not a commit name",
                                  "position past the end", "branch a tag",
                                  "patch with an unknown status", "patch entry not an object",
                                  "field of the wrong type", "group entry not a branch",
                                  "not JSON"])
def test_a_damaged_state_is_refused_by_continue_and_abort(stopped: dict[str, Any],
                                                          kind: str) -> None:
    """A state that does not validate field by field is never acted on: --continue and
    --abort both say so in one line (exit 2), and no ref moves."""
    up: CommitBuilder = stopped["up"]
    assert run_carry(*stopped["args"], "--onto", "main").code == 1
    path = up.path / ".git/carry/rebase/demo/main.json"
    bad = _damage(json.loads(path.read_text()))[kind]
    path.write_text(bad["raw"] if "raw" in bad else json.dumps(bad))
    refs = git(up.path, "for-each-ref")
    for action in ("--continue", "--abort", "--skip"):
        res = run_carry(*stopped["args"], action)
        assert res.code == 2, (kind, action, res.out, res.err)
        assert len(res.err.strip().splitlines()) == 1 and "Traceback" not in res.err
        assert "rebase state" in res.err and str(path) in res.err
        assert git(up.path, "for-each-ref") == refs


def test_a_state_file_reads_and_writes_back_the_same_bytes(stopped: dict[str, Any],
                                                          tmp_path: Path) -> None:
    """The typed state is the VERSION 2 document: a state file read (`RebaseState`) and
    written again is the same bytes, a finishing one with its group too; one from before
    `ready`, `trial` and the newer patch fields still reads."""
    from carry.rebase import state as st

    assert run_carry(*stopped["args"], "--onto", "main").code == 1
    raw = (stopped["up"].path / ".git/carry/rebase/demo/main.json").read_text()
    doc = json.loads(raw)
    head, newer = doc["head"], ("cause", "builds_on", "resolutions", "look")
    finishing = {**doc, "phase": "finishing", "position": len(doc["patches"]), "ready": False,
                 "trial": [], "group": [{"branch": doc["branch"], "old": None, "head": head}],
                 "patches": [{**p, "status": "applied", "commit": head} for p in doc["patches"]]}
    for text in (raw, json.dumps(finishing, indent=1) + "\n"):
        (tmp_path / "state.json").write_text(text)
        state = st.read(tmp_path / "state.json")
        assert json.dumps(state.to_json(), indent=1) + "\n" == text
    older = {k: v for k, v in doc.items() if k not in ("ready", "trial", "started")}
    older["patches"] = [{k: v for k, v in p.items() if k not in newer} for p in doc["patches"]]
    (tmp_path / "older.json").write_text(json.dumps(older))
    state = st.read(tmp_path / "older.json")
    assert state.ready and state.trial == [] and state.phase is st.Phase.CONFLICT
    assert state.stop.file == "0002-Two-h10.patch" and state.refresh_from is None


def test_two_targets_under_one_name_are_refused(stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    git(up.path, "branch", "rel/1.0", "main~1")
    git(up.path, "branch", "rel-1.0", "main")
    refs = git(up.path, "for-each-ref")
    res = run_carry(*stopped["args"], "--onto", "rel/1.0", "--onto", "rel-1.0")
    assert res.code == 2 and "would share the name 'rel-1.0'" in res.err
    assert git(up.path, "for-each-ref") == refs
    same = run_carry(*stopped["args"], "--onto", "main", "--onto", "main", "--dry-run", "--json")
    assert same.code == 1 and len(json.loads(same.out)) == 1  # one target given twice


# -- kill -9 ----------------------------------------------------------------------------------


@pytest.fixture
def long_series(upstream: CommitBuilder, make_series: MakeSeries,
                series_root: Path) -> dict[str, Any]:
    """Twenty-four patches with a conflict at patch 20, so that a run has many moments."""
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    for i in range(24):
        if i == 19:
            upstream.commit(f"P{i}", {"src/util.py": util(h10=100)}, author=LOGPROBZ)
        else:
            upstream.commit(f"P{i}", {f"pkg/m{i}.py": f"X = {i}\n"}, author=TOBY)
    upstream.checkout("main")
    upstream.commit("Upstream h10", {"src/util.py": util(h10=101)})
    upstream.commit("Upstream more", {"pkg/other.py": "Y = 1\n"})
    make_series(upstream, "feature")
    return {"up": upstream, "series": series_root / "demo",
            "args": ("rebase", "demo", "--repo", str(upstream.path),
                     "--series-dir", str(series_root))}


def _kill_and_abort(ctx: dict[str, Any], kills: int, seed: int,
                    continue_delays: tuple[float, ...]) -> None:
    up: CommitBuilder = ctx["up"]
    before = _snapshot(up.path)
    start = time.monotonic()
    assert run_carry(*ctx["args"], "--onto", "main").code == 1
    full = time.monotonic() - start
    assert run_carry(*ctx["args"], "--abort").code == 0
    assert _snapshot(up.path) == before
    rng = random.Random(seed)
    outcomes = set()
    for i in range(kills):
        for ref in git(up.path, "for-each-ref", "--format=%(refname)",
                       "refs/carry/cache/").split():
            git(up.path, "update-ref", "-d", ref)  # make every run build its chain again
        delay = full * (i + rng.random()) / kills
        code = kill_after((*ctx["args"], "--onto", "main"), delay)
        outcomes.add(code)
        abort = run_carry(*ctx["args"], "--abort")
        assert abort.code in (0, 2), abort.err  # 2: killed before any state was written
        if abort.code == 2:
            assert "no carry rebase of demo is in progress" in abort.err
        assert _snapshot(up.path) == before, f"kill after {delay:.3f}s (exit {code})"
        _no_leftovers(up.path)
    assert -signal.SIGKILL in outcomes  # at least one run really was killed mid-way
    # and kills during --continue, once the conflict is resolved. A --continue that got as
    # far as recording the resolution leaves it in the series even after --abort (as git's
    # rerere keeps what it learnt): each round starts from the series as it was, so that it
    # stops at the conflict again.
    interrupted = 0
    series: Path = ctx["series"]
    pristine = series.parent.parent / "pristine-demo"
    shutil.copytree(series, pristine, symlinks=True)
    for delay in continue_delays:
        shutil.rmtree(series)
        shutil.copytree(pristine, series, symlinks=True)
        assert run_carry(*ctx["args"], "--onto", "main").code == 1
        assert run_carry(*ctx["args"], "--resolve").code == 1  # makes the worktree
        state = json.loads((up.path / ".git/carry/rebase/demo/main.json").read_text())
        (Path(state["worktree"]) / "src/util.py").write_text(util(h10=1000))
        kill_after((*ctx["args"], "--continue"), delay)
        abort = run_carry(*ctx["args"], "--abort")
        if abort.code == 2:  # the kill came after the rebase had finished: a whole result
            assert git(up.path, "rev-list", "--count", "main..carry/demo/main") == "24"
            git(up.path, "update-ref", "-d", "refs/heads/carry/demo/main")
        else:
            interrupted += 1
        assert _snapshot(up.path) == before, f"kill of --continue after {delay}s"
        _no_leftovers(up.path)
    assert interrupted


def test_kill_minus_9_then_abort_leaves_repo_identical(long_series: dict[str, Any]) -> None:
    _kill_and_abort(long_series, kills=3, seed=1, continue_delays=(0.1, 0.3))


@pytest.mark.slow
def test_kill_minus_9_many_moments(long_series: dict[str, Any]) -> None:
    _kill_and_abort(long_series, kills=50, seed=7,
                    continue_delays=tuple(0.012 * i for i in range(1, 51)))


def test_a_kill_during_the_conflict_checkout_leaves_nothing_after_abort(
        stopped: dict[str, Any]) -> None:
    """carry killed while `git worktree add` fills the conflict worktree (which `--continue`
    makes at a stop): the git child dies with it, so nothing writes into the worktree after
    `--abort` removed it."""
    import signal
    import subprocess
    import sys

    up: CommitBuilder = stopped["up"]
    git(up.path, "checkout", "-q", "main")
    for d in range(20):  # a tree big enough that the checkout takes a while
        (up.path / "bulk" / f"d{d}").mkdir(parents=True)
        for f in range(300):
            (up.path / "bulk" / f"d{d}" / f"f{f}.txt").write_text(f"{d} {f}\n" * 20)
    git(up.path, "add", "-A")
    git(up.path, "commit", "-q", "-m", "bulk")
    before = _snapshot(up.path)
    wt = up.path.parent / f"{up.path.name}.carry" / "demo" / "main"
    assert run_carry(*stopped["args"], "--onto", "main").code == 1
    proc = subprocess.Popen([sys.executable, "-m", "carry", *stopped["args"], "--continue"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (wt / "bulk").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert run_carry(*stopped["args"], "--abort").code in (0, 2)
    time.sleep(1.0)  # what an orphaned checkout would still write, it writes by now
    assert _snapshot(up.path) == before
    _no_leftovers(up.path)
