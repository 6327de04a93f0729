"""A series folder outside any git checkout: `rebase --refresh` keeps the old version under
`.versions/vN/`, and `range-diff` compares it with the new one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import CommitBuilder, git, run_carry
from tests.test_rangediff import feature_series


def test_refresh_keeps_old_versions_outside_git(upstream: CommitBuilder,
                                                make_series: Callable[..., Any],
                                                series_root: Path) -> None:
    assert git(series_root, "rev-parse", "--is-inside-work-tree", check=False) != "true"
    up = upstream
    where = feature_series(up, make_series, series_root)
    v1 = {p.name: p.read_bytes() for p in (series_root / "demo" / "patches").iterdir()}
    up.commit("Take two", {"src/core.py": "def f():\n    return 2\n"})  # 0002 drops
    r = run_carry("rebase", "demo", *where, "--onto", "main", "--refresh")
    assert r.code == 0, r.err
    kept = series_root / "demo" / ".versions" / "v1"
    assert {p.name: p.read_bytes() for p in (kept / "patches").iterdir()} == v1
    assert 'version = 1\n' in (kept / "series.toml").read_text()
    res = run_carry("range-diff", "demo", "v1", *where, "v2")
    assert res.code == 0, res.err
    assert "One" in res.out and "Two" in res.out
    missing = run_carry("range-diff", "demo", "v7", *where)
    assert missing.code == 2 and "kept: v1" in missing.err
    listing = run_carry("series", "list", "--series-dir", str(series_root))
    assert listing.code == 0 and ".versions" not in listing.out
