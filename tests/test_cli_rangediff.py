"""`carry range-diff` passes --creation-factor to git, shows the inner diff of a changed patch by
default (text and --json `pairs`), and leaves it out with --no-patch/-s."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from carry.rebase.rangediff import pairs
from tests.conftest import UTIL, CommitBuilder, git, run_carry


def _two_versions(up: CommitBuilder, make_series: Callable[..., Any],
                  series_root: Path) -> tuple[str, ...]:
    """v1: One changes h1; v2: One, same subject, rewritten to change h1 and h2 otherwise."""
    git(series_root.parent, "init", "-q")
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("One", {"src/util.py": UTIL.replace("return 1\n", "return 11\n")})
    make_series(up, "feature")
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature2")
    up.commit("One", {"src/util.py": UTIL.replace("return 1\n", "return 111\n")
                      .replace("return 2\n", "return 22\n")})
    up.checkout("main")
    r = run_carry("import", "demo", "--repo", str(up.path), "--range", "base..feature2",
                  "--series-dir", str(series_root))
    assert r.code == 0 and "v2" in r.out, r.err
    return ("demo", "v1", "v2", "--repo", str(up.path), "--series-dir", str(series_root))


def _marks(out: str) -> list[tuple[int | None, str, int | None, str]]:
    return [(p.old, p.status, p.new, p.subject) for p in pairs(out)]


def test_creation_factor_reaches_git_and_a_changed_patch_shows_its_inner_diff(
        upstream: CommitBuilder, make_series: Callable[..., Any], series_root: Path) -> None:
    args = _two_versions(upstream, make_series, series_root)
    split = run_carry("range-diff", *args, "--creation-factor", "0")
    assert split.code == 0, split.err
    assert _marks(split.out) == [(1, "removed", None, "One"), (None, "added", 1, "One")]
    paired = run_carry("range-diff", *args)  # git's default factor pairs this one
    assert paired.code == 0, paired.err
    assert _marks(paired.out) == [(1, "changed", 1, "One")]
    inner = paired.out.splitlines()[1:]
    assert any(ln.strip() == "-+    return 11" for ln in inner), paired.out
    assert any(ln.strip() == "++    return 111" for ln in inner), paired.out
    for flag in ("--no-patch", "-s"):
        short = run_carry("range-diff", *args, "--creation-factor", "100", flag)
        assert short.code == 0, short.err
        assert _marks(short.out) == [(1, "changed", 1, "One")]
        assert len(short.out.splitlines()) == 1, short.out


def test_json_gives_each_pair_with_its_inner_diff(
        upstream: CommitBuilder, make_series: Callable[..., Any], series_root: Path) -> None:
    args = _two_versions(upstream, make_series, series_root)
    data = json.loads(run_carry("range-diff", *args, "--creation-factor", "100", "--json").out)
    [pair] = data["pairs"]
    assert (pair["old"], pair["status"], pair["new"], pair["subject"]) == (
        1, "changed", 1, "One")
    assert len(pair["old_commit"]) >= 7 and len(pair["new_commit"]) >= 7
    assert "++    return 111" in pair["diff"] and "@@" in pair["diff"]
    assert pair["diff"] in data["output"]
    data = json.loads(run_carry("range-diff", *args, "--creation-factor", "100", "--json",
                                "--no-patch").out)
    assert data["pairs"][0]["diff"] == "" and data["pairs"][0]["status"] == "changed"
    bad = run_carry("range-diff", *args, "--creation-factor", "-5")
    assert bad.code == 2 and "creation-factor" in bad.err
