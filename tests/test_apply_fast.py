"""Committing a patch takes no git process when its hunks apply exactly where git would put
them (`carry.replay.hunks`), and at most one otherwise (`apply --cached` on a small index carry
writes from the patch's own `index` lines); either way the commits are the ones the full
private index gives, whatever the sections: renames, a mode change, a link, odd names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from carry.git import Ident, Repo, indexfile
from carry.replay import chain
from carry.replay.preimage import preimage
from carry.series import patches as patchmod
from tests.conftest import UTIL, CommitBuilder, git

WHO = Ident("carry", "carry@cache", "1790000000 +0000")


def _odd_series(up: CommitBuilder) -> None:
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.mv("src/util.py", "src/helpers.py")
    up.commit("Pure rename")
    up.mv("src/helpers.py", "src/util2.py")
    up.commit("Rename with an edit", {"src/util2.py": UTIL.replace("return 3\n", "return 33\n")})
    up.commit("New file", {"src/copy.py": UTIL.replace("return 3\n", "return 33\n")})
    (up.path / "src" / "core.py").chmod(0o755)
    git(up.path, "update-index", "--chmod=+x", "src/core.py")
    up.commit("Mode only")
    up.commit("Binary", {"assets/logo.bin": bytes(range(256)) * 4})
    up.commit("Odd names", {"docs/ünï code.md": "hello\n", "a b/c\td.txt": "tab\n",
                            'q"uote.txt': "q\n"})
    os.symlink("src/core.py", up.path / "link")
    git(up.path, "add", "link")
    up.commit("A link")
    up.commit("Delete and nest", {"assets/logo.bin": None, "x/y/z/new.py": "N = 1\n"})
    up.checkout("main")


def test_every_section_takes_at_most_one_process(upstream: CommitBuilder, tmp_path: Path,
                                                  make_series: object,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _odd_series(upstream)
    s = make_series(upstream, "feature")  # type: ignore[operator]
    repo = Repo.open(upstream.path)
    plist = [patchmod.load(p.path, p.number) for p in s.patches()]
    assert len(plist) == 8
    assert all(preimage(p.diff) is not None for p in plist)
    base = upstream.rev("base")
    full = chain._full(repo, plist, base, WHO, None)
    repo.read_commit(base)  # the long-lived cat-file process, started before the count
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    assert chain._sparse(repo, plist, base, WHO, None) == full
    monkeypatch.delenv("GIT_TRACE")
    started = [ln for ln in trace.read_text().splitlines() if "trace: built-in: git" in ln]
    # Pure rename, rename with an edit, new file and mode only are applied in-process; a
    # binary, quoted names, a link and a binary deletion take `git apply --cached` each.
    assert len(started) == 4, started
    assert all(" apply --cached " in ln for ln in started)
    assert git(upstream.path, "fsck", "--strict", "--no-dangling") == ""
    repo.close()


def test_a_patch_for_another_blob_takes_the_full_index(upstream: CommitBuilder,
                                                       make_series: object) -> None:
    """A patch whose `index` line names another blob than the tree holds (cut for another
    base) is not committed through the small index: the full one words what goes wrong."""
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("Edit", {"src/util.py": UTIL.replace("return 4\n", "return 44\n")})
    upstream.checkout("main")
    upstream.commit("Upstream edit", {"src/util.py": UTIL.replace("return 9\n", "return 99\n")})
    s = make_series(upstream, "feature")  # type: ignore[operator]
    repo = Repo.open(upstream.path)
    plist = [patchmod.load(p.path, p.number) for p in s.patches()]
    with pytest.raises(chain._NotExact):
        chain._sparse(repo, plist, upstream.rev("main"), WHO, None)
    (sha,) = chain.materialize(repo, plist, upstream.rev("main"), WHO)
    assert repo.show_file(sha, "src/util.py") == UTIL.replace("return 4\n", "return 44\n") \
        .replace("return 9\n", "return 99\n").encode()
    repo.close()


def test_the_index_file_reads_back_what_git_reads(upstream: CommitBuilder,
                                                  tmp_path: Path) -> None:
    entries = {b"README": (b"100644", git(upstream.path, "rev-parse", "base:README")),
               b"src/core.py": (b"100755", git(upstream.path, "rev-parse", "base:src/core.py")),
               b"a" * 5000: (b"120000", git(upstream.path, "rev-parse", "base:README"))}
    path = tmp_path / "index"
    path.write_bytes(indexfile.encode(entries))
    listed = git(upstream.path, "ls-files", "--stage", env={"GIT_INDEX_FILE": str(path)})
    assert [ln.split("\t")[1] for ln in listed.splitlines()] == ["README", "a" * 5000,
                                                                  "src/core.py"]
    git(upstream.path, "update-index", "--add", "--cacheinfo",
        f"100644,{entries[b'README'][1]},new file", env={"GIT_INDEX_FILE": str(path)})
    back = indexfile.decode(path.read_bytes())
    assert back == {**entries, b"new file": entries[b"README"]}
    with pytest.raises(indexfile.IndexFormatError):
        indexfile.decode(b"DIRC" + bytes([0, 0, 0, 4]) + bytes(28))
