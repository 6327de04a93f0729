"""F17 part 3: `carry rebase --onto REF --furthest` writes the series on the newest commit of
REF's first-parent line it replays onto with no stop, and names the upstream commit and the
patch that block the next step. Real repositories: an upstream of 20 first-parent commits
(`Upstream change N (#43000+N)`, one a merge of a side branch) and a 3-patch series."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from carry.series.manifest import Target
from tests.conftest import CommitBuilder, git, run_carry, util
from tests.test_ci_loop import FORK, Site, site  # noqa: F401  (the CI loop's fixture)

PR0 = 43000


def _upstream(up: CommitBuilder, blocks: int | None, merge_at: int = 7,
              merge_blocks: bool = False) -> list[str]:
    """20 first-parent commits past `base` on main, oldest first; commit `blocks` (1-based)
    changes the lines patch 2 changes. Commit `merge_at` merges a side branch of two commits
    (`Merge pull request #...`); with `merge_blocks` the side branch holds the blocking change."""
    shas: list[str] = []
    for n in range(1, 21):
        if n == merge_at:
            git(up.path, "checkout", "-q", "-b", "side", "main")
            up.commit("Side one", {"side/a.txt": "a\n"})
            up.commit("Side two", {"src/util.py": util(h2=99)} if merge_blocks
                      else {"side/b.txt": "b\n"})
            up.checkout("main")
            git(up.path, "merge", "-q", "--no-ff", "--no-edit", "-m",
                f"Merge pull request #{PR0 + n} from lab/side", "side")
            shas.append(up.rev())
            continue
        files: dict[str, bytes | str | None] = {f"up/{n}.txt": f"{n}\n"}
        if n == blocks:
            files["src/util.py"] = util(h2=77)
        shas.append(up.commit(f"Upstream change {n} (#{PR0 + n})", files))
    return shas


@pytest.fixture
def series(upstream: CommitBuilder, make_series: Callable[..., Any]) -> CommitBuilder:
    git(upstream.path, "checkout", "-q", "-b", "feature", "base")
    upstream.commit("Patch one", {"src/util.py": util(h1=11)})
    upstream.commit("Patch two", {"src/util.py": util(h1=11, h2=22)})
    upstream.commit("Patch three", {"src/core.py": "def f():\n    return 3\n"})
    upstream.checkout("main")
    make_series(upstream, "feature", targets=[Target("upstream-main", ref="main")])
    return upstream


def _rebase(up: CommitBuilder, root: Path, *extra: str) -> Any:
    return run_carry("rebase", "demo", "--repo", str(up.path), "--series-dir", str(root),
                     "--onto", "main", "--furthest", *extra)


def _patches_on(up: CommitBuilder, branch: str, onto: str) -> list[str]:
    return git(up.path, "log", "--reverse", "--format=%s", f"{onto}..{branch}").splitlines()


def test_furthest_stops_before_the_blocking_commit(series: CommitBuilder,
                                                    series_root: Path) -> None:
    shas = _upstream(series, blocks=13)
    r = _rebase(series, series_root)
    assert r.code == 0, r.err
    assert "up to #43012 (12 of 20 commits); blocked by #43013 on 0002" in r.out, r.out
    branch = "refs/heads/carry/demo/main"
    assert git(series.path, "rev-parse", f"{branch}~3") == shas[11]
    assert _patches_on(series, branch, shas[11]) == ["Patch one", "Patch two", "Patch three"]
    verbose = run_carry("rebase", "demo", "--repo", str(series.path), "--series-dir",
                        str(series_root), "--onto", "main", "--furthest", "--dry-run", "-v")
    assert verbose.code == 0, verbose.err
    assert f"blocked by {shas[12][:12]} Upstream change 13 (#43013)" in verbose.out
    assert "on 0002-Patch-two.patch in src/util.py" in verbose.out, verbose.out
    assert f"onto {shas[11][:12]} Upstream change 12 (#43012)" in verbose.out


def test_furthest_json_names_commit_and_patch(series: CommitBuilder, series_root: Path) -> None:
    shas = _upstream(series, blocks=13)
    before = git(series.path, "for-each-ref", "refs/heads", "refs/tags")
    r = _rebase(series, series_root, "--dry-run", "--json")
    assert r.code == 0, r.err
    [doc] = json.loads(r.out)
    f = doc["furthest"]
    assert doc["onto"] == shas[11] and doc["status"] == "applied" and doc["dry_run"]
    assert (f["reach"], f["steps"], f["total"]) == ("partial", 12, 20)
    assert f["onto"] == {"sha": shas[11], "subject": "Upstream change 12 (#43012)",
                         "pr": 43012}
    assert f["blocker"]["commit"]["sha"] == shas[12] and f["blocker"]["commit"]["pr"] == 43013
    assert f["blocker"]["patch"] == "0002-Patch-two.patch"
    assert f["blocker"]["paths"] == ["src/util.py"]
    assert f["probes"] <= 6  # a bisection: 1 + ceil(log2(21)), not 20 replays
    # --dry-run writes no ref
    assert git(series.path, "for-each-ref", "refs/heads", "refs/tags") == before


def test_no_conflict_goes_to_the_tip(series: CommitBuilder, series_root: Path) -> None:
    shas = _upstream(series, blocks=None)
    r = _rebase(series, series_root, "--json")
    assert r.code == 0, r.err
    [doc] = json.loads(r.out)
    assert doc["furthest"]["reach"] == "tip" and doc["furthest"]["probes"] == 1
    assert doc["furthest"]["blocker"] is None
    assert git(series.path, "rev-parse", "carry/demo/main~3") == shas[-1]
    terse = _rebase(series, series_root)
    assert "up to #43020, the tip (20 of 20 commits)" in terse.out, terse.out


def test_conflict_at_the_first_commit_moves_nothing(series: CommitBuilder,
                                                    series_root: Path) -> None:
    _upstream(series, blocks=1)
    r = _rebase(series, series_root)
    assert r.code == 1, r.out + r.err
    assert "nothing moves (0 of 20 commits); blocked by #43001 on 0002" in r.out, r.out
    assert git(series.path, "for-each-ref", "refs/heads/carry") == ""
    assert not list((series.path / ".git" / "carry").glob("**/state*.json"))
    j = _rebase(series, series_root, "--json")
    assert j.code == 1
    [doc] = json.loads(j.out)
    assert doc["status"] == "failed" and doc["furthest"]["reach"] == "none"
    assert doc["furthest"]["onto"]["sha"] == series.rev("base")


def test_a_merge_on_the_first_parent_line_blocks_as_one_commit(series: CommitBuilder,
                                                               series_root: Path) -> None:
    shas = _upstream(series, blocks=None, merge_at=9, merge_blocks=True)
    r = _rebase(series, series_root, "--json")
    assert r.code == 0, r.err
    [doc] = json.loads(r.out)
    f = doc["furthest"]
    assert (f["reach"], f["steps"]) == ("partial", 8)
    assert f["blocker"]["commit"]["sha"] == shas[8]  # the merge, not the side commit
    assert f["blocker"]["commit"]["pr"] == 43009
    assert git(series.path, "rev-parse", "carry/demo/main~3") == shas[7]


def test_merge_before_the_block_is_a_candidate(series: CommitBuilder, series_root: Path) -> None:
    shas = _upstream(series, blocks=13, merge_at=12)
    r = _rebase(series, series_root, "--json")
    assert r.code == 0, r.err
    [doc] = json.loads(r.out)
    assert doc["onto"] == shas[11] and doc["furthest"]["onto"]["pr"] == 43012
    assert len(git(series.path, "rev-list", "--parents", "-1", shas[11]).split()) == 3


def test_a_recorded_resolution_counts(series: CommitBuilder, series_root: Path) -> None:
    """0002's conflict with commit 4, resolved once and recorded, no longer stops it: the
    furthest point is past 4, before commit 8 (which blocks 0003)."""
    for n in range(1, 6):
        series.commit(f"Upstream change {n} (#{PR0 + n})", {f"up/{n}.txt": f"{n}\n", **(
            {"src/util.py": util(h2=77)} if n == 4 else {})})
    args = ("--repo", str(series.path), "--series-dir", str(series_root))
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 1  # stops at 0002
    state = json.loads((series.path / ".git/carry/rebase/demo/main.json").read_text())
    assert run_carry("rebase", "--resolve", *args).code == 1
    (Path(state["worktree"]) / "src/util.py").write_text(util(h1=11, h2=2277))
    done = run_carry("rebase", "--continue", *args)
    assert done.code == 0 and "recorded the resolution" in done.out, done.out + done.err
    shas = [series.commit(f"Upstream change {n} (#{PR0 + n})", {f"up/{n}.txt": f"{n}\n", **(
        {"src/core.py": "def f():\n    return 8\n"} if n == 8 else {})}) for n in range(6, 11)]
    r = run_carry("rebase", "demo", "--onto", "main", "--furthest", "--dry-run", "--json", *args)
    assert r.code == 0, r.err
    [doc] = json.loads(r.out)
    f = doc["furthest"]
    assert (f["steps"], f["total"], f["onto"]["sha"]) == (7, 10, shas[1]), f
    assert f["blocker"]["commit"]["pr"] == PR0 + 8
    assert f["blocker"]["patch"].startswith("0003-")
    assert doc["patches"][1]["resolutions"], doc["patches"][1]


def test_furthest_cannot_change_a_stopped_rebase(series: CommitBuilder,
                                                 series_root: Path) -> None:
    _upstream(series, blocks=13)
    args = ("rebase", "demo", "--repo", str(series.path), "--series-dir", str(series_root))
    assert run_carry(*args, "--onto", "main").code == 1  # stopped at 0002
    r = run_carry(*args, "--skip", "--furthest")
    assert r.code == 2 and "--furthest cannot change it now" in r.err, r.err
    assert len(r.err.strip().splitlines()) <= 2


# -- the CI job: a conflicting cell validates its furthest point, and the PR carries it -------


def test_ci_cell_validates_the_furthest_point_and_the_pr_carries_it(
        site: Site) -> None:  # noqa: F811  (the fixture imported above)
    from carry.series import store as seriesmod
    from carry.series.store import Target
    from tests.test_ci_loop import CORE

    s = site.series()
    s.manifest.targets = [Target(name="dev", ref="main", kind="dev")]
    seriesmod.save_manifest(s)
    up = site.up
    up.checkout("main")
    up.commit("docs: one (#101)", {"docs/one.md": "one\n"})
    two = up.commit("docs: two (#102)", {"docs/two.md": "two\n"})
    block = up.commit("core: keep only the newest state (#103)",
                      {"calc/core.py": CORE.replace("[-1:]", "[-1:]  # newest only")})
    up.commit("docs: three (#104)", {"docs/three.md": "three\n"})
    cell = site.cell({"series": "good", "target": "dev", "ref": "main"}, "--open-pr",
                     "--track-issues")
    (row,) = cell["rows"]
    assert cell["status"] == "failed" and row["rebase"] == "conflict"
    assert row["furthest"] == "up to #102 (3 of 5 commits); blocked by #103 on 0001"
    assert (row["furthest_onto"], row["furthest_validate"]) == (two, "passed")
    assert row["validate"] == "not run"  # the target itself conflicts
    summary = (site.tmp / "out" / "summary.md").read_text()
    assert ("furthest: up to #102 (3 of 5 commits); blocked by #103 on 0001; validated "
            "there: passed") in summary
    acts = {a["kind"]: a for a in cell["loop"]}
    assert acts["issue"]["action"] == "opened" and acts["pr"]["action"] == "opened"
    assert "up to #102" in acts["pr"]["note"]
    pushed = git(up.path, "ls-remote", "origin", "refs/heads/carry/good/tip").split()[0]
    assert git(up.path, "rev-parse", f"{pushed}~2") == two  # 2 patches on #102
    assert subprocess.run(["git", "merge-base", "--is-ancestor", block, pushed],
                          cwd=up.path).returncode == 1
    assert site.series().manifest.base.commit == two
    (pull,) = site.gh.state.repos[FORK].pulls.values()
    assert "9 tests passed" in pull.body  # the furthest point's own validation report


def test_dashboard_says_how_far_a_conflicting_cell_goes(tmp_path: Path,
                                                        series_root: Path) -> None:
    from carry.job import shared, steer
    from carry.job.board import Cell

    row = shared.Row("good", "dev", "f" * 40, "conflict", conflict="0001-x.patch (a.py)",
                     furthest="up to #102 (3 of 5 commits); blocked by #103 on 0001",
                     furthest_head="e" * 40, furthest_validate="passed")
    cell = Cell("good", "dev")
    steer._take(cell, row, False, "2026-12-06T00:00:00Z")
    assert cell.state == "conflict"
    assert cell.details[-1] == ("up to #102 (3 of 5 commits); blocked by #103 on 0001; "
                                "validated there: passed")


@pytest.mark.parametrize("auto", [True, False])
def test_furthest_goes_past_a_conflict_that_resolves_by_itself(
        upstream: CommitBuilder, make_series: Callable[..., Any], series_root: Path,
        auto: bool) -> None:
    """Automatic resolutions count as recorded ones do: upstream's commit 10 adds an entry to
    the dict the patch adds one to, which resolves by itself, so the series goes to the tip;
    with `--no-auto-resolve` that commit blocks it."""
    reg = 'KERNELS = {\n    "a": 1,\n}\n'
    upstream.commit("Add the registry", {"src/reg.py": reg})
    git(upstream.path, "tag", "-f", "base")
    git(upstream.path, "checkout", "-q", "-b", "feature", "base")
    upstream.commit("Patch one", {"src/reg.py": reg.replace("}", '    "mine": 2,\n}')})
    upstream.checkout("main")
    make_series(upstream, "feature", targets=[Target("upstream-main", ref="main")])
    for n in range(1, 21):
        files: dict[str, bytes | str | None] = {f"up/{n}.txt": f"{n}\n"}
        if n == 10:
            files["src/reg.py"] = reg.replace("}", '    "theirs": 3,\n}')
        upstream.commit(f"Upstream change {n} (#{PR0 + n})", files)
    r = _rebase(upstream, series_root, "--dry-run", *(() if auto else ("--no-auto-resolve",)))
    assert r.code == 0, r.err
    if auto:
        assert "up to #43020, the tip (20 of 20 commits)" in r.out, r.out
        assert "blocked by" not in r.out and "resolved by itself" in r.out, r.out
    else:
        assert "up to #43009 (9 of 20 commits); blocked by #43010 on 0001" in r.out, r.out


def test_a_line_that_does_not_pass_through_the_base_is_refused(series: CommitBuilder,
                                                                series_root: Path) -> None:
    """Unrelated history, a ref behind the base, a line that reaches the base only through a
    merge: no point of it is the base plus upstream commits. One line, exit 2, nothing
    written (before, an unrelated line said "nothing moves" and a ref behind the base was
    called the tip and then replayed onto, to a conflict)."""
    _upstream(series, blocks=None)
    git(series.path, "checkout", "-q", "--orphan", "other")
    series.commit("Unrelated (#1)", {"x.txt": "x\n"})
    git(series.path, "checkout", "-q", "-b", "merged", "other")
    git(series.path, "merge", "-q", "--no-edit", "--allow-unrelated-histories", "-m",
        "Merge main", "main")
    series.checkout("main")
    args = ("--repo", str(series.path), "--series-dir", str(series_root))
    for ref in ("other", "base~1", "merged", "main,other"):
        onto = [x for r in ref.split(",") for x in ("--onto", r)]
        r = run_carry("rebase", "demo", *onto, "--furthest", *args)
        assert r.code == 2, (ref, r.out, r.err)
        assert r.err.count("\n") == 1 and "does not pass through the series base" in r.err, \
            (ref, r.err)
        assert git(series.path, "for-each-ref", "refs/heads/carry") == ""
        assert not list((series.path / ".git" / "carry").glob("**/*.json"))
    shallow = series.path.parent / "shallow"  # main's line cut short before the base
    subprocess.run(["git", "clone", "-q", "--depth", "5", "--no-local", "--branch", "main",
                    str(series.path), str(shallow)], check=True)
    git(shallow, "fetch", "-q", "--depth", "1", "origin", "refs/tags/base:refs/tags/base")
    r = run_carry("rebase", "demo", "--onto", "origin/main", "--furthest", "--dry-run",
                  "--repo", str(shallow), "--series-dir", str(series_root))
    assert r.code == 2 and r.err.count("\n") == 1 and "git fetch --unshallow" in r.err, r.err
    assert _rebase(series, series_root).code == 0  # the base itself is on main's line
    assert run_carry("rebase", "demo", "--onto", "base", "--furthest", "--dry-run",
                     *args).code == 0
