""""did you mean" for refs, series, targets and versions, by edit distance."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from carry.base.suggest import did_you_mean, distance, nearest
from carry.series.store import Target
from tests.conftest import CommitBuilder, git, run_carry


def test_distance_counts_a_swap_as_one_edit() -> None:
    assert distance("mian", "main") == 1
    assert distance("my-fx", "my-fix") == 1
    assert distance("upstream/mian", "upstream/main") == 1
    assert distance("", "abc") == 3 and distance("abc", "abc") == 0
    assert distance("ca", "abc") == 3  # optimal string alignment, not unrestricted


def test_nearest_keeps_only_the_closest_and_nothing_far() -> None:
    refs = ["upstream/main", "upstream/HEAD2", "fork/main", "v1.0"]
    assert nearest("upstream/mian", refs) == ["upstream/main"]
    assert nearest("main", refs) == ["fork/main", "upstream/main"]  # the remote left out
    assert nearest("zzzz", refs) == []
    assert did_you_mean("v1.O", refs) == "did you mean 'v1.0'?"
    assert did_you_mean("v3", ["v1", "v2"]) == "did you mean 'v1' or 'v2'?"
    assert did_you_mean("qq", ["v1"]) is None


def test_cli_suggests_refs_series_targets_and_versions(
        upstream: CommitBuilder, make_series: Callable[..., Any], series_root: Path) -> None:
    git(series_root.parent, "init", "-q")  # the series checkout keeps the version tags
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("One", {"src/core.py": "def f():\n    return 3\n"})
    upstream.checkout("main")
    git(upstream.path, "update-ref", "refs/remotes/upstream/main", "main")
    make_series(upstream, "feature", name="my-fix",
                targets=[Target(name="upstream-main", ref="upstream/main")])
    sd = ("--series-dir", str(series_root))
    repo = ("--repo", str(upstream.path))
    cases = {
        ("rebase", "my-fix", *repo, "--onto", "upstream/mian"):
            "unknown revision 'upstream/mian'",
        ("rebase", "my-fx", *repo): "unknown series 'my-fx'",
        ("rebase", "my-fix", *repo, "--target", "upstream-mian"):
            "unknown target 'upstream-mian'",
        ("range-diff", "my-fix", "v7", *repo): "no version v7",
        ("range-diff", "my-fix", "curent", *repo): "bad version 'curent'",
        ("apply", "my-fix", *repo, "--onto", "feture", "--branch", "x"):
            "unknown revision 'feture'",
    }
    wanted = {
        "unknown revision 'upstream/mian'": "did you mean 'upstream/main'?",
        "unknown series 'my-fx'": "did you mean 'my-fix'?",
        "unknown target 'upstream-mian'": "did you mean 'upstream-main'?",
        "no version v7": "did you mean 'v1'?",
        "bad version 'curent'": "did you mean 'current'?",
        "unknown revision 'feture'": "did you mean 'feature'?",
    }
    for args, said in cases.items():
        r = run_carry(*args, *sd)
        assert r.code == 2, (args, r.err)
        [line] = r.err.splitlines()
        assert said in line and f"(hint: {wanted[said]})" in line, line


def test_a_manifest_target_with_a_typo_gets_the_nearest_ref(
        upstream: CommitBuilder, make_series: Callable[..., Any], series_root: Path) -> None:
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("One", {"src/core.py": "def f():\n    return 3\n"})
    git(upstream.path, "update-ref", "refs/remotes/upstream/main", "main")
    make_series(upstream, "feature", targets=[Target(name="main", ref="upstream/mian")])
    r = run_carry("rebase", "demo", "--repo", str(upstream.path), "--series-dir",
                  str(series_root))
    assert r.code == 2
    assert "ref 'upstream/mian' is not in" in r.err and "did you mean 'upstream/main'?" in r.err
