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


def test_the_stream_is_cut_where_git_would_write_files(upstream: CommitBuilder,
                                                       tmp_path: Path) -> None:
    """format_patch reads one stream; each patch must be byte for byte the file git writes
    for it, even where a message quotes the From line of the commit before it (the one line
    the cut could take for a start) and where a patch ends in a binary hunk's blank line."""
    from carry.git import FORMAT_PATCH_ARGS, Repo
    from carry.git.base import STABLE_CONFIG

    first = upstream.commit("One\n", {"a": "1\n"})
    upstream.commit(f"Two\n\nFrom {first} Mon Sep 17 00:00:00 2001\nquoted\n",
                    {"b.bin": bytes(range(256)) * 4})
    upstream.commit("Nothing\n", allow_empty=True)
    upstream.mv("a", "renamed")
    upstream.commit("Three\n\nFrom 0000000000000000000000000000000000000000 Mon Sep 17 "
                    "00:00:00 2001\n", {"renamed": "1\n2\n", "c": "no newline"})
    upstream.commit("Four\n", {"b.bin": bytes(range(255, -1, -1)) * 4})
    out = tmp_path / "files"
    git(upstream.path, *STABLE_CONFIG, "format-patch", "-o", str(out), "--numbered-files",
        *FORMAT_PATCH_ARGS, "base..HEAD")
    files = [f.read_bytes() for f in sorted(out.iterdir(), key=lambda p: int(p.name))]
    repo = Repo.open(upstream.path)
    try:
        got = repo.format_patch(repo.rev_parse("base"), repo.rev_parse("HEAD"))
    finally:
        repo.close()
    assert [text for _, text in got] == [f for f in files if f]
    assert len(got) == 4 and got[1][1].endswith(b"\n\n")
    assert [sha for sha, _ in got] == [f[5:45].decode() for f in files if f]
