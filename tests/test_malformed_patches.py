"""A patch cut between `---` and the end of its hunks, or whose diffstat or index lines promise
a change it does not carry, is bad input in every command: one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CommitBuilder, git, run_carry


@pytest.fixture
def demo(upstream: CommitBuilder, series_root: Path) -> tuple[CommitBuilder, Path]:
    upstream.commit("Three files\n\nSigned-off-by: A U Thor <author@example.com>\n",
                    {"src/core.py": "def f():\n    return 2\n", "empty": "",
                     "README": "upstream\nmore\n"})
    r = run_carry("import", "demo", "--repo", str(upstream.path), "--range", "base..HEAD",
                  "--series-dir", str(series_root))
    assert r.code == 0, r.err
    return upstream, series_root


def _cuts(data: bytes) -> list[bytes]:
    """The patch cut after each line from its `---` to its last line (the whole file excluded)."""
    lines = data.splitlines(keepends=True)
    start = lines.index(b"---\n")
    return [b"".join(lines[:n]) for n in range(start + 1, len(lines))]


def _assert_refused(r: object, *needles: str) -> None:
    code, out, err = r.code, r.out, r.err  # type: ignore[attr-defined]
    assert code == 2, (code, out, err)
    assert len(err.splitlines()) == 1 and err.startswith("carry: error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, err


def test_every_cut_is_refused_by_check_and_apply(demo: tuple[CommitBuilder, Path]) -> None:
    repo, root = demo
    (patch,) = (root / "demo" / "patches").iterdir()
    whole = patch.read_bytes()
    cuts = _cuts(whole)
    assert len(cuts) > 20  # the diffstat, three headers and two hunks
    refs = git(repo.path, "for-each-ref")
    for cut in cuts:
        patch.write_bytes(cut)
        where = f"--- cut after {cut.splitlines()[-1]!r}"
        r = run_carry("check", "demo", "--series-dir", str(root))
        _assert_refused(r, patch.name, "malformed")
        r = run_carry("apply", "demo", "--repo", str(repo.path), "--onto", "base",
                      "--branch", "new", "--series-dir", str(root))
        _assert_refused(r, patch.name)
        assert git(repo.path, "for-each-ref") == refs, where
        assert patch.read_bytes() == cut, where
    patch.write_bytes(whole)
    assert run_carry("check", "demo", "--series-dir", str(root)).code == 0


@pytest.mark.parametrize("edit", [
    (b" 3 files changed, 2 insertions(+), 1 deletion(-)",
     b" 4 files changed, 3 insertions(+), 1 deletion(-)"),
    (b" 3 files changed, 2 insertions(+), 1 deletion(-)",
     b" 3 files changed, 9 insertions(+), 1 deletion(-)"),
])
def test_a_diffstat_that_promises_more_is_refused(demo: tuple[CommitBuilder, Path],
                                                  edit: tuple[bytes, bytes]) -> None:
    _, root = demo
    (patch,) = (root / "demo" / "patches").iterdir()
    data = patch.read_bytes()
    assert edit[0] in data
    patch.write_bytes(data.replace(edit[0], edit[1]))
    _assert_refused(run_carry("check", "demo", "--series-dir", str(root)), "diffstat promises")


def test_an_index_line_without_its_hunk_is_refused(demo: tuple[CommitBuilder, Path]) -> None:
    """No diffstat to compare with (a hand-made patch): the index line alone gives it away."""
    repo, root = demo
    (patch,) = (root / "demo" / "patches").iterdir()
    data = patch.read_bytes()
    head, sep, rest = data.partition(b"\n---\n")
    diffs = rest[rest.index(b"diff --git "):]
    readme_end = diffs.index(b"diff --git ", 1)
    readme_head = diffs[:diffs.index(b"@@", 0, readme_end)]  # README's headers, not its hunk
    patch.write_bytes(head + sep + readme_head + diffs[readme_end:])
    r = run_carry("apply", "demo", "--repo", str(repo.path), "--onto", "base", "--branch",
                  "new", "--series-dir", str(root))
    _assert_refused(r, "README", "index line promises a change")
    assert git(repo.path, "branch", "--list", "new") == ""


def test_a_file_that_becomes_a_symlink_imports_and_applies(upstream: CommitBuilder,
                                                           series_root: Path) -> None:
    """git writes a type change as two sections under one diffstat line: not malformed."""
    git(upstream.path, "checkout", "-q", "-b", "linked", "base")
    (upstream.path / "src" / "core.py").unlink()
    (upstream.path / "src" / "core.py").symlink_to("util.py")
    git(upstream.path, "add", "-A")
    git(upstream.path, "commit", "-q", "-m", "core becomes a link")
    r = run_carry("import", "link", "--repo", str(upstream.path), "--range", "base..linked",
                  "--series-dir", str(series_root))
    assert r.code == 0, r.err
    a = run_carry("apply", "link", "--repo", str(upstream.path), "--onto", "base", "--branch",
                  "relinked", "--series-dir", str(series_root))
    assert a.code == 0, a.err
    assert git(upstream.path, "rev-parse", "relinked^{tree}") == git(
        upstream.path, "rev-parse", "linked^{tree}")
