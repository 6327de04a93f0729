"""F10 item 1: a conflict resolved once is recorded in the series (`resolutions/`) and applied
by every later replay that meets the same conflict: another target at the same upstream
commit, a rerun, the next release with other lines moved around it, `carry validate`, the
CI job. A different conflict on the same patch still stops. Real git, through the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from carry.series import store as seriesmod
from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, run_carry, util

MakeSeries = Callable[..., Any]


@pytest.fixture
def stopped(upstream: CommitBuilder, make_series: MakeSeries,
            series_root: Path) -> dict[str, Any]:
    """Three patches; upstream changed the lines of patch 2 (h10), so a rebase onto main
    stops there. The tag `rel` is the same commit as main."""
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("One\n\nSigned-off-by: Toby Mao <toby@example.com>\n",
                    {"src/util.py": util(h1=11)}, author=TOBY)
    upstream.commit("Two: h10\n\nSigned-off-by: logprobz <logprobz@example.com>\n",
                    {"src/util.py": util(h1=11, h10=100)}, author=LOGPROBZ)
    upstream.commit("Three", {"src/core.py": "def f():\n    return 3\n"}, author=TOBY)
    upstream.checkout("main")
    upstream.commit("Upstream h10", {"src/util.py": util(h10=101)})
    upstream.tag("rel")
    make_series(upstream, "feature")
    args = ("--repo", str(upstream.path), "--series-dir", str(series_root))
    return {"up": upstream, "root": series_root, "args": args}


def carry(ctx: dict[str, Any], *args: str) -> Any:
    return run_carry(*args, *ctx["args"])


def worktree(ctx: dict[str, Any], target: str = "main") -> Path:
    state = json.loads((ctx["up"].path / f".git/carry/rebase/demo/{target}.json").read_text())
    return Path(state["worktree"])


def resolve_once(ctx: dict[str, Any]) -> Any:
    """Stop onto main, resolve h10 as 1001 by hand, --continue."""
    assert carry(ctx, "rebase", "demo", "--onto", "main").code == 1
    (worktree(ctx) / "src/util.py").write_text(util(h1=11, h10=1001))
    res = carry(ctx, "rebase", "--continue")
    assert res.code == 0, res.err
    return res


def test_resolve_once_then_another_target_a_rerun_and_the_next_release(
        stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    res = resolve_once(stopped)
    line = [ln for ln in res.out.splitlines() if "recorded the resolution" in ln]
    assert len(line) == 1, res.out
    assert "0002-Two-h10.patch" in line[0] and "as v2" in line[0]
    assert "--refresh" in line[0] and "keeps the resolved patch itself" in line[0]
    s = seriesmod.find(stopped["root"], "demo")
    assert s.manifest.version == 2
    [rfile] = sorted((s.root / "resolutions").iterdir())
    assert rfile.name.startswith("0002-") and rfile.suffix == ".txt"
    text = rfile.read_text()
    assert 'path "src/util.py"' in text and " " + "    return 1001\n" in text
    # the same conflict on another target at the same upstream commit: no stop
    other = carry(stopped, "rebase", "demo", "--onto", "rel")
    assert other.code == 0, other.out + other.err
    assert ("rel: 0002-Two-h10.patch applied: conflict resolved by the resolution recorded "
            "on v2") in other.out
    assert git(up.path, "show", "carry/demo/rel:src/util.py") == util(
        h1=11, h10=1001).strip()
    # a rerun onto main, in JSON
    again = carry(stopped, "rebase", "demo", "--onto", "main", "--json")
    assert again.code == 0, again.err
    [d] = json.loads(again.out)
    two = d["patches"][1]
    assert two["status"] == "applied" and two["resolutions"] == [rfile.stem]
    assert two["reason"] == "conflict resolved by the resolution recorded on v2"
    assert d["patches"][0]["resolutions"] == [] and d["status"] == "applied"
    # the next release: upstream moved on around the hunk (h9, h11, a new file)
    up.commit("Upstream h9 h11", {"src/util.py": util(h9=90, h10=101, h11=110),
                                  "src/new.py": "N = 1\n"})
    up.tag("rel2")
    nxt = carry(stopped, "rebase", "demo", "--onto", "rel2")
    assert nxt.code == 0, nxt.out + nxt.err
    assert "0002-Two-h10.patch applied: conflict resolved by the resolution recorded on v2" \
        in nxt.out
    assert git(up.path, "show", "carry/demo/rel2:src/util.py") == util(
        h1=11, h9=90, h10=1001, h11=110).strip()


def test_a_different_conflict_on_the_same_patch_still_stops(stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    resolve_once(stopped)
    up.commit("Upstream h10 again", {"src/util.py": util(h10=102)})
    res = carry(stopped, "rebase", "demo", "--onto", "main", "--json")
    assert res.code == 1, res.err
    [d] = json.loads(res.out)
    assert [p["status"] for p in d["patches"]] == ["applied", "conflict", "pending"]
    assert d["patches"][1]["resolutions"] == []


def test_refresh_keeps_the_resolutions_and_status_prunes_what_no_longer_matches(
        stopped: dict[str, Any]) -> None:
    """In a checkout (versions are tags): the recording is v2, a refresh v3 that keeps the
    file; the refreshed patch holds the resolution itself, so status says the recorded one
    no longer matches, and --prune removes it as v4. Every version's tag holds what it had."""
    up: CommitBuilder = stopped["up"]
    root: Path = stopped["root"]
    git(root.parent, "init", "-q")
    resolve_once(stopped)
    name = next((root / "demo/resolutions").iterdir()).name
    status = carry(stopped, "status", "demo", "--json")
    assert status.code == 0, status.err
    [s] = json.loads(status.out)["series"]
    assert [(r["file"], r["patch"], r["path"], r["version"], r["unmatched"])
            for r in s["resolutions"]] == [(f"resolutions/{name}", "0002", "src/util.py", 2, "")]
    ref = carry(stopped, "rebase", "demo", "--onto", "main", "--refresh")
    assert ref.code == 0, ref.out + ref.err
    assert "conflict resolved by the resolution recorded on v2" in ref.out
    series = seriesmod.find(root, "demo")
    assert series.manifest.version == 3 and (series.root / "resolutions" / name).is_file()
    for v in ("v2", "v3"):
        assert git(root.parent, "ls-tree", "--name-only", f"series/demo/{v}:resolutions") == name
    assert "resolutions" not in git(root.parent, "ls-tree", "--name-only", "series/demo/v1")
    # range-diff of the versions says which resolutions came and went
    rd = carry(stopped, "range-diff", "demo", "v1", "v2")
    assert rd.code == 0, rd.err
    assert f"resolutions: + {name}" in rd.out
    # the refreshed 0002 carries the resolution: the recorded conflict cannot happen again
    text = carry(stopped, "status", "demo")
    assert text.code == 0, text.err
    assert f"resolution resolutions/{name} (0002, src/util.py, recorded on v2)" in text.out
    assert "NO LONGER MATCHES: patch 0002 no longer holds the lines" in text.out
    assert f"carry status demo --repo {up.path} --prune" in text.out
    pruned = carry(stopped, "status", "demo", "--prune", "--json")
    assert pruned.code == 0, pruned.err
    [p] = json.loads(pruned.out)["series"]
    assert list(p["pruned"]) == [f"resolutions/{name}"] and p["pruned_version"] == 4
    assert p["resolutions"] == []
    series = seriesmod.find(root, "demo")
    assert series.manifest.version == 4 and not (series.root / "resolutions").exists()
    assert "pruned 1 recorded resolution" in series.manifest.changelog[-1].summary
    assert git(root.parent, "ls-tree", "--name-only", "series/demo/v3:resolutions") == name
    # nothing more to prune: no new version
    again = carry(stopped, "status", "demo", "--prune", "--json")
    assert again.code == 0 and seriesmod.find(root, "demo").manifest.version == 4
    assert run_carry("status", "--prune", "--series-dir", str(root)).code == 2


def test_validate_ci_and_the_pr_body_apply_it_and_say_so(stopped: dict[str, Any],
                                                         tmp_path: Path) -> None:
    """`carry validate` and `carry ci` replay with the recorded resolution; the report, the
    CI summary and the PR body name the patch and the version of the resolution."""
    import sys

    up: CommitBuilder = stopped["up"]
    root: Path = stopped["root"]
    resolve_once(stopped)
    assert carry(stopped, "rebase", "demo", "--onto", "rel").code == 0
    val = carry(stopped, "validate", "demo", "--onto", "rel", "--engine", "local",
                "--python", sys.executable, "--allow-no-tests", "--json")
    assert val.code == 0, val.out + val.err
    report = json.loads(val.out)
    assert report["resolved"] == [
        "0002-Two-h10.patch: conflict resolved by the resolution recorded on v2"]
    assert report["head_tree"] == git(up.path, "rev-parse", "carry/demo/rel^{tree}")
    text = carry(stopped, "validate", "demo", "--onto", "rel", "--engine", "local",
                 "--python", sys.executable, "--allow-no-tests")
    assert text.code == 0 and "0002-Two-h10.patch: conflict resolved by the resolution " \
        "recorded on v2" in text.out and "[cached]" in text.out
    # the branch holds 0002 as resolved, not as the series has it: --force (or --refresh)
    pr = carry(stopped, "pr", "demo", "--branch", "carry/demo/rel", "--forge-repo", "lab/fork",
               "--base", "main", "--dry-run", "--force", "--json")
    assert pr.code == 0, pr.out + pr.err
    assert ("`0002-Two-h10.patch` Two: h10 (logprobz); on `rel`: conflict resolved by the "
            "resolution recorded on v2") in json.loads(pr.out)["body"]
    out = tmp_path / "out"
    ci = run_carry("ci", "--repo", str(up.path), "--engine", "local", "--python",
                   sys.executable, "--onto", "rel", "--out", str(out), "--json",
                   env={"CARRY_SERIES_DIR": str(root)})
    assert ci.code in (0, 1), ci.err
    [row] = json.loads(ci.out)["rows"]
    assert row["rebase"] == "applied" and row["resolved"] == report["resolved"]
    assert "applied<br>0002-Two-h10.patch: conflict resolved by the resolution recorded on " \
        "v2" in (out / "summary.md").read_text()
