"""A series whose patches are exactly the commits they were made from (`From <sha>`) is
committed from those commits' trees, with one `diff-tree` and no patch applied, and gives the
very commits that applying it gives; a patch edited since (even with its `index` line left
as it was), an origin the clone lacks, or a diffstat that holds more than stat lines, is
applied as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from carry.base.errors import CarryError
from carry.git import Ident, Repo
from carry.replay import chain
from carry.series import patches as patchmod
from tests.conftest import CommitBuilder, git
from tests.test_apply_fast import _odd_series

WHO = Ident("carry", "carry@cache", "1790000000 +0000")


def _plist(upstream: CommitBuilder, make_series: object) -> list[patchmod.Patch]:
    _odd_series(upstream)
    s = make_series(upstream, "feature")  # type: ignore[operator]
    return [patchmod.load(p.path, p.number) for p in s.patches()]


def _started(trace: Path) -> list[str]:
    """The git commands started while `trace` was $GIT_TRACE (none: no file)."""
    if not trace.exists():
        return []
    return [ln.split("built-in: git ", 1)[1] for ln in trace.read_text().splitlines()
            if "trace: built-in: git" in ln]


def test_patches_equal_to_their_origins_apply_nothing(upstream: CommitBuilder, tmp_path: Path,
                                                      make_series: object,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    plist = _plist(upstream, make_series)
    assert len(plist) == 8 and all(p.origin for p in plist)
    repo = Repo.open(upstream.path)
    base = upstream.rev("base")
    applied = chain._full(repo, plist, base, WHO, None)
    repo.read_commit(base)  # the long-lived cat-file process, started before the count
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    seen: list[int] = []
    assert chain.materialize(repo, plist, base, WHO, lambda i, n, f: seen.append(i)) == applied
    monkeypatch.delenv("GIT_TRACE")
    started = _started(trace)
    # the renames, the binary, the link, the quoted names: one diff-tree, no apply
    assert len(started) == 1 and started[0].startswith("diff-tree --stdin -p "), started
    assert seen == list(range(1, 9))
    origins = [repo.read_commit(p.origin).tree for p in plist]
    assert [repo.read_commit(c).tree for c in applied] == origins
    repo.close()


def _edit(patch: patchmod.Patch, old: bytes, new: bytes) -> patchmod.Patch:
    assert old in patch.diff
    return patchmod.Patch(patch.number, patch.file, patch.origin, patch.author, patch.message,
                          patch.diff.replace(old, new, 1), patch.verbatim, patch.encoding)


def test_an_edited_patch_is_applied_not_taken_from_its_origin(upstream: CommitBuilder,
                                                              make_series: object) -> None:
    """Patch 3's added line changed by hand, its `index` line still naming the origin's
    blob: the commits from there on are the applied ones, and hold the edit."""
    plist = _plist(upstream, make_series)
    plist[2] = _edit(plist[2], b"+    return 33\n", b"+    return 34\n")
    repo = Repo.open(upstream.path)
    base = upstream.rev("base")
    made = chain.materialize(repo, plist, base, WHO)
    assert made == chain._full(repo, plist, base, WHO, None)
    assert b"return 34" in repo.show_file(made[2], "src/copy.py")
    assert repo.read_commit(made[2]).tree != repo.read_commit(plist[2].origin).tree
    repo.close()


def test_an_origin_not_in_the_clone_is_applied(upstream: CommitBuilder,
                                               make_series: object) -> None:
    plist = _plist(upstream, make_series)
    plist[0] = patchmod.Patch(1, plist[0].file, "1" * 40, plist[0].author, plist[0].message,
                              plist[0].diff, plist[0].verbatim, plist[0].encoding)
    repo = Repo.open(upstream.path)
    base = upstream.rev("base")
    assert chain._from_origins(repo, plist, base, WHO, None) == []
    assert chain.materialize(repo, plist, base, WHO) == chain._full(repo, plist, base, WHO, None)
    repo.close()


def test_a_diffstat_holding_a_diff_is_not_trusted(upstream: CommitBuilder,
                                                  make_series: object) -> None:
    """A traditional diff slipped in before the first `diff --git` (where the diffstat is):
    git apply reads it, so the origin's tree is not the answer; whatever applying gives (here
    a refusal or a change of README) is what materialize gives."""
    plist = _plist(upstream, make_series)
    readme = git(upstream.path, "show", "base:README")
    first = readme.splitlines()[0]
    sneak = (f"--- a/README\n+++ b/README\n@@ -1 +1 @@\n-{first}\n+sneaked\n").encode()
    p = plist[0]
    at = p.diff.index(b"diff --git ")
    plist[0] = patchmod.Patch(1, p.file, p.origin, p.author, p.message,
                              p.diff[:at] + sneak + p.diff[at:], p.verbatim, p.encoding)
    repo = Repo.open(upstream.path)
    base = upstream.rev("base")
    assert chain._from_origins(repo, plist, base, WHO, None) == []
    try:
        want: object = chain._full(repo, plist, base, WHO, None)
    except CarryError as exc:
        want = type(exc)
    try:
        got: object = chain.materialize(repo, plist, base, WHO)
    except CarryError as exc:
        got = type(exc)
    assert got == want
    repo.close()


def test_origins_on_another_base_are_not_taken(upstream: CommitBuilder, tmp_path: Path,
                                               make_series: object,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The series committed onto another commit than its origins' parent: no origin's tree
    is the answer there, and no diff is asked of git for it."""
    plist = _plist(upstream, make_series)
    upstream.commit("Upstream moves", {"NEWS": "moved\n"})
    repo = Repo.open(upstream.path)
    onto = upstream.rev("main")
    assert repo.read_commit(onto).tree != repo.read_commit(upstream.rev("base")).tree
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    assert chain._from_origins(repo, plist, onto, WHO, None) == []
    monkeypatch.delenv("GIT_TRACE")
    assert not any(c.startswith("diff-tree") for c in _started(trace))
    repo.close()


def test_commit_diffs_are_format_patchs_own_and_skip_an_empty_commit(
        upstream: CommitBuilder) -> None:
    """Each commit's diff as `format_patch` writes it, an empty commit in the middle left
    out, and a message line that looks like the next commit's id not taken for one."""
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "side")
    one = upstream.commit("One", {"a.txt": "one\n"})
    empty = upstream.commit("Nothing", allow_empty=True)
    three = upstream.commit("Three", {"b.bin": bytes(range(256)), "a.txt": None})
    four = upstream.commit(f"{three}\n\nnames the commit before", {"c.txt": f"{three}\n"})
    upstream.checkout("main")
    repo = Repo.open(upstream.path)
    got = repo.commit_diffs([one, empty, three, four])
    assert set(got) == {one, three, four}
    from carry.series.patches import split_mail

    for sha, mail in repo.format_patch(upstream.rev("base"), four):
        assert got[sha] == split_mail(mail)[2][split_mail(mail)[2].index(b"diff --git "):]
    repo.close()


def test_only_whole_stat_lines_may_stand_before_the_diff(upstream: CommitBuilder,
                                                         make_series: object) -> None:
    """The diff must start a line: glued onto a stat line, `git apply` would not read its
    first header where format-patch put it."""
    plist = _plist(upstream, make_series)
    repo = Repo.open(upstream.path)
    p = plist[0]
    made = repo.commit_diffs([p.origin])[p.origin]
    assert chain._same_diff(p.diff, made)
    at = len(p.diff) - len(made)
    assert p.diff[at - 2:at] == b"\n\n"
    assert not chain._same_diff(p.diff[:at - 1] + b" x " + p.diff[at:], made)
    assert not chain._same_diff(p.diff[:at] + b"--- a/README\n" + p.diff[at:], made)
    assert not chain._same_diff(p.diff.replace(b"diff --git ", b"diff  --git ", 1), made)
    repo.close()
