"""Import, then apply onto the same base: tree, author, date and message come back byte-exact."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from carry.series import store as seriesmod
from tests.conftest import LOGPROBZ, THOR, TOBY, CommitBuilder, git, run_carry
from tests.roundtrip import assert_same, raw_commit, roundtrip

Step = Callable[[CommitBuilder], None]

LONG_TRAILERS = (
    "Fix the replay boundary\n\n"
    "The boundary moved.\n\n"
    "Signed-off-by: A U Thor <author@example.com>\n"
    "Co-authored-by: Toby Mao <toby@example.com>\n"
    "Assisted-by: OpenAI Codex\n"
    "Link: https://example.com/a/very/long/link\n"
    "  that continues on an indented line\n"
    "(cherry picked from commit 0123456789abcdef0123456789abcdef01234567)\n"
    "Signed-off-by: logprobz <logprobz@example.com>\n"
)


def _commit(message: str | bytes, files: dict[str, bytes | str | None],
            author: tuple[str, str] = THOR, date: str | None = None) -> Step:
    def step(b: CommitBuilder) -> None:
        b.commit(message, files, author=author, date=date)

    return step


def _rename(b: CommitBuilder) -> None:
    b.mv("src/util.py", "src/helpers.py")
    b.commit("Rename util to helpers", {"src/helpers.py": (b.path / "src/helpers.py")
                                        .read_text() + "# renamed\n"})


def _mode(b: CommitBuilder) -> None:
    executable = git(b.path, "ls-files", "-s", "src/core.py").startswith("100755")
    git(b.path, "update-index", "--chmod=" + ("-x" if executable else "+x"), "src/core.py")
    b.commit("Flip the executable bit of core")


def _mode_and_content(b: CommitBuilder) -> None:
    (b.path / "src/core.py").write_text("#!/usr/bin/env python\ndef f():\n    return 2\n")
    git(b.path, "add", "src/core.py")
    git(b.path, "update-index", "--chmod=+x", "src/core.py")
    b.commit("Executable with new content")


def _binary_change(b: CommitBuilder) -> None:
    b.commit("Binary one", {"blob.bin": bytes(range(256))})
    b.commit("Binary two", {"blob.bin": bytes(reversed(range(256))) + b"\0tail"})


def _latin1_encoded(b: CommitBuilder) -> None:
    """A message git stores as ISO-8859-1 bytes under an `encoding` header."""
    (b.path / "enc.txt").write_text("enc\n")
    git(b.path, "add", "enc.txt")
    tree = git(b.path, "write-tree")
    env = {"GIT_AUTHOR_NAME": "J\u00f6rg", "GIT_AUTHOR_EMAIL": "j@example.com",
           "GIT_AUTHOR_DATE": "@1790000000 +0100"}
    sha = git(b.path, "-c", "i18n.commitEncoding=ISO-8859-1", "commit-tree", tree, "-p",
              "HEAD", env=env, input=b"Caf\xe9 \xe9t\xe9\n\nCorps \xe0 l'\xe9t\xe9.\n")
    git(b.path, "update-ref", "HEAD", sha)
    assert b"\nencoding ISO-8859-1\n" in b.raw(sha)


def _symlink(b: CommitBuilder) -> None:
    os.symlink("src/core.py", b.path / "link")
    git(b.path, "add", "link")
    b.commit("Add a symlink")


CASES: dict[str, Step] = {
    "plain": _commit("Add g\n\nA body.\n", {"src/core.py": "def f():\n    return 2\n"}),
    "unusual-trailers": _commit(LONG_TRAILERS, {"a.txt": "a\n"}),
    "multiple-signoffs": _commit(
        "Two sign-offs\n\nbody\n\nSigned-off-by: A U Thor <author@example.com>\n"
        "Signed-off-by: Toby Mao <toby@example.com>\nSigned-off-by: A U Thor "
        "<author@example.com>\n", {"a.txt": "b\n"}),
    "subject-only": _commit("Only a subject\n", {"a.txt": "c\n"}),
    "no-trailing-newline": _commit("No newline at the end", {"a.txt": "d\n"}),
    "empty-message": _commit(b"", {"a.txt": "e\n"}),
    "dashes-in-body": _commit("Dashes\n\nabove\n---\nbelow the dashes\n", {"a.txt": "f\n"}),
    "diff-in-body": _commit("Quote a diff\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n",
                            {"a.txt": "g\n"}),
    "from-line": _commit("From line\n\nFrom the start of a line\nFrom 1234 Mon Sep 17\n",
                         {"a.txt": "h\n"}),
    "crlf-message": _commit(b"CRLF subject\r\n\r\nCRLF body\r\n", {"a.txt": "i\n"}),
    "crlf-content": _commit("CRLF file", {"win.txt": b"one\r\ntwo\r\n"}),
    "multi-line-subject": _commit("First line of subject\nsecond line of subject\n\nbody\n",
                                  {"a.txt": "j\n"}),
    "trailing-whitespace": _commit("Trailing space   \n\nbody with tab\t\n  \n\nend  \n\n\n",
                                   {"a.txt": "k  \n"}),
    "leading-blank-lines": _commit("\n\nSubject after blanks\n", {"a.txt": "l\n"}),
    "non-ascii-author": _commit("Ünïcödé\n\nBody: café, 日本語\n", {"a.txt": "m\n"},
                                author=("Jörg Ångström 山田", "jorg@example.com")),
    "non-utf8-message": _commit(b"Latin-1 \xe9t\xe9\n\nbody \xff\xfe\n", {"a.txt": "n\n"}),
    "non-utf8-content": _commit("Latin-1 file", {"latin1.txt": b"caf\xe9\n\xff\x00x\n"}),
    "binary": _commit("Add a binary", {"blob.bin": bytes(range(256)) * 4}),
    "binary-change": _binary_change,
    "rename": _rename,
    "deletion": _commit("Delete the readme", {"README": None}),
    "mode-change": _mode,
    "mode-and-content": _mode_and_content,
    "empty-file": _commit("Add an empty file", {"empty": b""}),
    "symlink": _symlink,
    "negative-timezone": _commit("West", {"a.txt": "o\n"}, date="@1790001234 -0730"),
    "utc-zone": _commit("UTC", {"a.txt": "p\n"}, date="@1790001234 +0000"),
    "odd-zone": _commit("Nepal", {"a.txt": "q\n"}, date="@1790001234 +0545"),
    "long-subject": _commit("x" * 300 + "\n\nbody\n", {"a.txt": "r\n"}),
    "email-like-subject": _commit("Re: [PATCH v2 3/7] [BugFix] keep [tags]\n", {"a.txt": "s\n"}),
    "quoted-author": _commit("Quoted author", {"a.txt": "t\n"},
                             author=('Thor "the A" U', "thor+tag@example.com")),
    "tab-in-subject": _commit("Tab\tin subject\n", {"a.txt": "u\n"}),
    "scissors-and-comments": _commit(
        "Comments\n\n# not a comment for commit-tree\n-- >8 --\nkept\n", {"a.txt": "v\n"}),
    "latin1-encoded-message": _latin1_encoded,
    "unicode-path": _commit("Unicode path", {"dir ü/naïve file.txt": "w\n"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_case_round_trips(case: str, upstream: CommitBuilder, series_root: Path) -> None:
    CASES[case](upstream)
    pairs = roundtrip(upstream.path, "base", series_root)
    assert pairs
    assert_same(pairs)


def test_every_case_in_one_series(upstream: CommitBuilder, series_root: Path) -> None:
    for case in sorted(CASES):
        CASES[case](upstream)
    pairs = roundtrip(upstream.path, "base", series_root)
    assert len(pairs) == len(CASES) + 1  # binary-change makes two commits
    assert_same(pairs)
    # Only the commits git am would alter carry exact-value headers; the others are plain.
    texts = [p.read_bytes() for p in sorted((series_root / "rt" / "patches").iterdir())]
    assert any(b"X-Carry-Message: " in t for t in texts)
    assert sum(b"X-Carry-" not in t for t in texts) >= 10


def test_plain_patches_need_no_carry_headers(upstream: CommitBuilder, series_root: Path) -> None:
    """The flagship shape: ordinary messages stay plain format-patch that `git am` reads."""
    upstream.commit("[BugFix] First\n\nWhy.\n", {"a.txt": "1\n"}, author=TOBY)
    upstream.commit("[BugFix] Second\n\nWhy.\n\nAssisted-by: OpenAI Codex\n"
                    "Signed-off-by: logprobz <logprobz@example.com>\n", {"a.txt": "2\n"},
                    author=LOGPROBZ)
    roundtrip(upstream.path, "base", series_root)
    for p in (series_root / "rt" / "patches").iterdir():
        assert b"X-Carry-" not in p.read_bytes()


def test_git_am_agrees_on_plain_patches(upstream: CommitBuilder, series_root: Path) -> None:
    """A plain carried patch is real format-patch: `git am` makes the same commit from it."""
    upstream.commit("Plain change\n\nBody.\n\nSigned-off-by: A U Thor <author@example.com>\n",
                    {"src/core.py": "def f():\n    return 3\n"}, date="@1790005000 -0500")
    original = upstream.rev()
    roundtrip(upstream.path, "base", series_root)
    upstream.checkout("base")
    patch = next((series_root / "rt" / "patches").iterdir())
    git(upstream.path, "am", "-q", "-k", str(patch))
    am, orig = raw_commit(upstream.path, "HEAD"), raw_commit(upstream.path, original)
    assert (am.tree, am.author, am.message) == (orig.tree, orig.author, orig.message)


def test_round_trip_through_the_cli(upstream: CommitBuilder, tmp_path: Path) -> None:
    CASES["unusual-trailers"](upstream)
    CASES["non-utf8-message"](upstream)
    CASES["binary"](upstream)
    CASES["crlf-message"](upstream)
    sdir = str(tmp_path / "s")
    r = run_carry("import", "demo", "--repo", str(upstream.path), "--range", "base..HEAD",
                  "--series-dir", sdir)
    assert r.code == 0, r.err
    r = run_carry("apply", "demo", "--repo", str(upstream.path), "--onto", "base",
                  "--branch", "carried", "--series-dir", sdir)
    assert r.code == 0, r.err
    old = git(upstream.path, "rev-list", "--reverse", "base..HEAD").split()
    new = git(upstream.path, "rev-list", "--reverse", "base..carried").split()
    assert len(old) == len(new) == 4
    assert_same([(raw_commit(upstream.path, a), raw_commit(upstream.path, b))
                 for a, b in zip(old, new, strict=True)])


def test_committer_is_the_running_user(upstream: CommitBuilder, series_root: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    upstream.commit("Change", {"a.txt": "x\n"})
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Rö Bot")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "robot@example.com")
    pairs = roundtrip(upstream.path, "base", series_root)
    assert_same(pairs, committer="Rö Bot <robot@example.com>".encode())


def test_apply_touches_no_worktree_or_index(upstream: CommitBuilder, series_root: Path) -> None:
    upstream.commit("Change", {"src/core.py": "changed\n"})
    (upstream.path / "untracked").write_text("mine\n")
    (upstream.path / "README").write_text("dirty\n")
    index = (upstream.path / ".git" / "index").read_bytes()
    head = upstream.rev()
    roundtrip(upstream.path, "base", series_root)
    assert (upstream.path / "README").read_text() == "dirty\n"
    assert (upstream.path / "untracked").read_text() == "mine\n"
    assert (upstream.path / ".git" / "index").read_bytes() == index
    assert upstream.rev() == head
    status = subprocess.run(["git", "status", "--porcelain"], cwd=upstream.path,
                            capture_output=True, text=True, check=True).stdout
    assert status.split("\n")[0] == " M README"


def test_apply_onto_another_base_keeps_authorship(upstream: CommitBuilder,
                                                  series_root: Path) -> None:
    upstream.commit("Ours", {"a.txt": "ours\n"}, author=TOBY, date="@1790000000 +0930")
    roundtrip(upstream.path, "base", series_root)
    upstream.checkout("base")
    upstream.commit("Upstream moved", {"README": "moved\n"})
    upstream.branch("moved")
    series = seriesmod.find(series_root, "rt")
    from carry.git import Repo
    from carry.intake import apply as applymod

    result = applymod.run(series, Repo.open(upstream.path), "moved", "onto-moved", force=False)
    new = raw_commit(upstream.path, result.head)
    assert new.author == b"Toby Mao <toby@example.com> 1790000000 +0930"
    assert git(upstream.path, "show", f"{result.head}:README") == "moved"
    assert git(upstream.path, "show", f"{result.head}:a.txt") == "ours"


@pytest.mark.parametrize("case", ["diff-in-body", "dashes-in-body"])
def test_git_am_applies_patches_whose_message_quotes_a_diff(
        case: str, upstream: CommitBuilder, series_root: Path) -> None:
    """The visible body is made safe for mailinfo; the exact message rides in X-Carry-Message."""
    CASES[case](upstream)
    original = upstream.rev()
    roundtrip(upstream.path, "base", series_root)
    patch = next((series_root / "rt" / "patches").iterdir())
    assert b"X-Carry-Message: " in patch.read_bytes()
    upstream.checkout("base")
    git(upstream.path, "am", "-q", "-k", str(patch))
    assert raw_commit(upstream.path, "HEAD").tree == raw_commit(upstream.path, original).tree
