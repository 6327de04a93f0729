"""A message may hold format-patch's own `From <sha> Mon Sep 17 ...` line: the patches are
never split on it, and an empty commit in the range is refused by name, not counted away."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CommitBuilder, git, run_carry
from tests.roundtrip import assert_same, roundtrip

MAGIC = "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001"


def _series(upstream: CommitBuilder) -> None:
    upstream.commit(f"Quote a patch\n\nIt began with\n{MAGIC}\nFrom: Eve <eve@example.com>\n"
                    "Subject: [PATCH] not mine\n\nand went on.\n", {"a": "1\n"})
    upstream.commit("Second\n", {"b": "2\n"})


def test_a_from_line_in_a_message_stays_in_its_patch(upstream: CommitBuilder,
                                                     series_root: Path) -> None:
    _series(upstream)
    pairs = roundtrip(upstream.path, "base", series_root)
    assert len(pairs) == 2
    assert_same(pairs)
    assert MAGIC.encode() in pairs[0][1].message


def test_an_empty_commit_beside_a_from_line_is_refused(upstream: CommitBuilder,
                                                       series_root: Path) -> None:
    """Before: the From line made one patch two and the empty commit made no patch, so the
    count matched and 0002 took the base commit's identity."""
    _series(upstream)
    empty = upstream.commit("Nothing here\n", allow_empty=True)
    refs = git(upstream.path, "for-each-ref")
    r = run_carry("import", "demo", "--repo", str(upstream.path), "--range", "base..HEAD",
                  "--series-dir", str(series_root))
    assert r.code == 2, r
    assert len(r.err.splitlines()) == 1, r.err
    assert f"commit {empty[:12]} ('Nothing here') has no patch" in r.err
    assert "refusing to lose any" in r.err
    assert not (series_root / "demo").exists()
    assert git(upstream.path, "for-each-ref") == refs
