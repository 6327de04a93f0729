"""A version number carry writes again gets its tag moved, or is refused: `carry` writes and
tags v2, the maintainer discards it (`git checkout -- series/NAME`), and the next write is v2
again. Its tag must then name the new v2 (range-diff reads it), when the old tag is carry's
own and names a version no commit holds; anything else is one line, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CommitBuilder, git, run_carry

ME = ("Me Self", "me@example.com")
AUTHOR = {"GIT_AUTHOR_NAME": "A U Thor", "GIT_AUTHOR_EMAIL": "author@example.com"}


@pytest.fixture
def committed(upstream: CommitBuilder, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> tuple[CommitBuilder, Path]:
    """Series `demo` v1 (one patch by ME), committed in its checkout, whose user is ME."""
    checkout = tmp_path / "checkout"
    root = checkout / "series"
    root.mkdir(parents=True)
    git(checkout, "init", "-q")
    git(checkout, "config", "user.name", ME[0])
    git(checkout, "config", "user.email", ME[1])
    monkeypatch.delenv("GIT_COMMITTER_NAME")
    monkeypatch.delenv("GIT_COMMITTER_EMAIL")
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("My fix\n\nBody.\n", {"src/p1.py": "P = 1\n"}, author=ME)
    upstream.checkout("main")
    r = run_carry("import", "demo", "--repo", str(upstream.path), "--range", "base..feature",
                  "--series-dir", str(root))
    assert r.code == 0, r.err
    git(checkout, "add", "-A")
    git(checkout, "commit", "-qm", "demo v1", env=AUTHOR)
    return upstream, root


def _folder_tree(checkout: Path) -> str:
    git(checkout, "add", "-A", "--", "series/demo")
    return git(checkout, "write-tree", "--prefix=series/demo/")


def test_a_discarded_version_number_written_again_moves_its_tag(
        committed: tuple[CommitBuilder, Path]) -> None:
    up, root = committed
    checkout = root.parent
    signed = run_carry("trailers", "demo", "--signoff", "--series-dir", str(root))
    assert signed.code == 0 and "series/demo/v2" in signed.out, signed.out + signed.err
    discarded = git(checkout, "rev-parse", "series/demo/v2")
    git(checkout, "checkout", "--", "series/demo")  # the maintainer discards v2
    up.checkout("feature")
    up.commit("Another fix\n", {"src/p2.py": "P = 2\n"}, author=ME)
    up.checkout("main")
    again = run_carry("import", "demo", "--repo", str(up.path), "--range", "base..feature",
                      "--series-dir", str(root))
    assert again.code == 0, again.out + again.err
    assert "Traceback" not in again.err
    tag = git(checkout, "rev-parse", "series/demo/v2")
    assert tag != discarded and tag == _folder_tree(checkout)
    rd = run_carry("range-diff", "demo", "v1", "v2", "--repo", str(up.path), "--series-dir",
                   str(root))
    assert rd.code == 0, rd.err
    assert "Another fix" in rd.out and "Signed-off-by" not in rd.out, rd.out


@pytest.mark.parametrize("kind", ["a user's tag of a commit", "a committed version"])
def test_a_version_tag_carry_cannot_move_is_refused_in_one_line(
        committed: tuple[CommitBuilder, Path], kind: str) -> None:
    up, root = committed
    checkout = root.parent
    if kind == "a user's tag of a commit":
        git(checkout, "tag", "series/demo/v2", "HEAD")
    else:  # v2 committed on a branch, then the checkout went back to v1
        assert run_carry("trailers", "demo", "--signoff", "--series-dir", str(root)).code == 0
        git(checkout, "checkout", "-q", "-b", "side")
        git(checkout, "commit", "-qam", "demo v2", env=AUTHOR)
        git(checkout, "checkout", "-q", "-")
    tag = git(checkout, "rev-parse", "series/demo/v2")
    before = sorted((p.name, p.read_bytes()) for p in root.rglob("*") if p.is_file())
    up.checkout("feature")
    up.commit("Another fix\n", {"src/p2.py": "P = 2\n"}, author=ME)
    up.checkout("main")
    r = run_carry("import", "demo", "--repo", str(up.path), "--range", "base..feature",
                  "--series-dir", str(root))
    assert r.code == 2 and "Traceback" not in r.err, r.out + r.err
    assert r.err.startswith("carry: error: cannot write v2 of demo") and \
        len(r.err.strip().splitlines()) == 1, r.err
    assert git(checkout, "rev-parse", "series/demo/v2") == tag
    assert sorted((p.name, p.read_bytes()) for p in root.rglob("*") if p.is_file()) == before


def test_outside_git_a_discarded_kept_version_is_set_aside_for_the_new_one(
        upstream: CommitBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No checkout: v2 is kept as `.versions/v2`; the maintainer puts v1's files back by
    hand; the next v2 is kept in its place (the old one moved aside, not deleted)."""
    root = tmp_path / "series"
    root.mkdir()
    monkeypatch.setenv("GIT_COMMITTER_NAME", ME[0])
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", ME[1])
    up = upstream
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("My fix\n\nBody.\n", {"src/p1.py": "P = 1\n"}, author=ME)
    up.checkout("main")
    where = ("--repo", str(up.path), "--series-dir", str(root))
    assert run_carry("import", "demo", "--range", "base..feature", *where).code == 0
    d = root / "demo"
    v1 = {p.relative_to(d): p.read_bytes() for p in d.rglob("*")
          if p.is_file() and ".versions" not in p.parts}
    assert run_carry("trailers", "demo", "--signoff", "--series-dir", str(root)).code == 0
    assert (d / ".versions/v2").is_dir()
    for p in (d / "patches").iterdir():  # the maintainer puts v1 back by hand
        p.unlink()
    for rel, data in v1.items():
        (d / rel).write_bytes(data)
    up.checkout("feature")
    up.commit("Another fix\n", {"src/p2.py": "P = 2\n"}, author=ME)
    up.checkout("main")
    again = run_carry("import", "demo", "--range", "base..feature", *where)
    assert again.code == 0, again.out + again.err
    kept = {p.name: p.read_bytes() for p in (d / ".versions/v2/patches").iterdir()}
    assert kept == {p.name: p.read_bytes() for p in (d / "patches").iterdir()}
    [aside] = (d / ".versions").glob(".v2-discarded-*")
    assert b"Signed-off-by" in b"".join(p.read_bytes() for p in (aside / "patches").iterdir())
    rd = run_carry("range-diff", "demo", "v1", "v2", *where)
    assert rd.code == 0, rd.err
    assert "Another fix" in rd.out and "Signed-off-by" not in rd.out, rd.out
