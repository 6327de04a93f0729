"""carry range-diff: both versions rebuilt as commits from their tags, compared by git, with an
empty side and with --against a rebased branch."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import TOBY, CommitBuilder, git, run_carry

MakeSeries = Callable[..., Any]
UTIL = "".join(f"def h{i}():\n    return {i}\n\n" for i in range(20))


def _setup(up: CommitBuilder, make_series: MakeSeries, series_root: Path) -> tuple[str, ...]:
    git(series_root.parent, "init", "-q")  # the toolkit checkout keeps the version tags
    return feature_series(up, make_series, series_root)


def feature_series(up: CommitBuilder, make_series: MakeSeries,
                   series_root: Path) -> tuple[str, ...]:
    """Series `demo`: patches One (src/util.py) and Two (src/core.py) on `base`."""
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("One", {"src/util.py": UTIL.replace("return 1\n", "return 11\n")}, author=TOBY)
    up.commit("Two", {"src/core.py": "def f():\n    return 2\n"}, author=TOBY)
    up.checkout("main")
    make_series(up, "feature")
    return ("--repo", str(up.path), "--series-dir", str(series_root))


def _lines(out: str) -> list[str]:
    """`1:  abc = 1:  def One` -> `1 = 1 One`, without the commit ids."""
    pat = re.compile(r"^\s*([-\d]+):\s+[-0-9a-f]+ ([=!<>]) \s*([-\d]+):\s+[-0-9a-f]+ (.*)$")
    return [" ".join(m.groups()) for ln in out.splitlines() if (m := pat.match(ln))]


def test_range_diff_between_refreshed_versions(upstream: CommitBuilder, make_series: MakeSeries,
                                               series_root: Path) -> None:
    where = _setup(upstream, make_series, series_root)
    upstream.commit("Take two", {"src/core.py": "def f():\n    return 2\n"})  # 0002 drops
    upstream.commit("Move", {"src/util.py": "# moved\n" + UTIL})
    assert run_carry("rebase", "demo", *where, "--onto", "main", "--refresh").code == 0
    res = run_carry("range-diff", "demo", "v1", *where, "v2")
    assert res.code == 0, res.err
    assert _lines(res.out) == ["1 = 1 One", "2 < - Two"]
    js = run_carry("range-diff", "demo", "v1", *where, "--json")  # v2 is current
    data = json.loads(js.out)
    assert data["old"]["count"] == 2 and data["new"]["count"] == 1
    assert data["new"]["base"] == upstream.rev("main")


def test_range_diff_with_an_empty_side(upstream: CommitBuilder, make_series: MakeSeries,
                                       series_root: Path) -> None:
    where = _setup(upstream, make_series, series_root)
    upstream.commit("Take one", {"src/util.py": UTIL.replace("return 1\n", "return 11\n")})
    upstream.commit("Take two", {"src/core.py": "def f():\n    return 2\n"})
    assert run_carry("rebase", "demo", *where, "--onto", "main", "--refresh").code == 0
    forward = run_carry("range-diff", "demo", "v1", *where, "v2")
    assert forward.code == 0, forward.err
    assert _lines(forward.out) == ["1 < - One", "2 < - Two"]
    backward = run_carry("range-diff", "demo", "v2", *where, "v1")
    assert backward.code == 0, backward.err
    assert _lines(backward.out) == ["- > 1 One", "- > 2 Two"]


def test_range_diff_against_a_rebased_branch(upstream: CommitBuilder, make_series: MakeSeries,
                                             series_root: Path) -> None:
    where = _setup(upstream, make_series, series_root)
    upstream.commit("Move", {"src/util.py": "# moved\n" + UTIL})
    assert run_carry("rebase", "demo", *where, "--onto", "main", "--branch", "rebased").code == 0
    git(upstream.path, "commit", "--allow-empty", "-q", "-m", "later upstream")  # main moves on
    auto = run_carry("range-diff", "demo", "current", *where, "--against", "rebased")
    assert auto.code == 0, auto.err
    assert _lines(auto.out) == ["1 = 1 One", "2 = 2 Two"]
    explicit = run_carry("range-diff", "demo", "v1", *where, "--against", "main~1..rebased")
    assert _lines(explicit.out) == ["1 = 1 One", "2 = 2 Two"]


def test_range_diff_unknown_version(upstream: CommitBuilder, make_series: MakeSeries,
                                    series_root: Path) -> None:
    where = _setup(upstream, make_series, series_root)
    res = run_carry("range-diff", "demo", "v7", *where)
    assert res.code == 2 and "no version v7 of demo" in res.err


def test_an_unknown_against_ref_fails_before_anything_is_written(
        upstream: CommitBuilder, make_series: MakeSeries, series_root: Path) -> None:
    where = _setup(upstream, make_series, series_root)
    refs = git(upstream.path, "for-each-ref")
    for against in ("nope", "main..nope", "nope..main"):
        res = run_carry("range-diff", "demo", "current", *where, "--against", against)
        assert res.code == 2 and "unknown revision 'nope'" in res.err, res.err
        assert len(res.err.strip().splitlines()) == 1
    assert git(upstream.path, "for-each-ref") == refs  # no chain cache ref was made
