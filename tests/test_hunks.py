"""carry applies a patch in-process only where git would do exactly the same: whenever
`hunks.apply` answers, its entries (and so its tree, blob for blob) must be what `git apply
--cached` leaves in the same small index, for patches real `git diff` and `format-patch` make
from generated files and edits; and where git refuses a patch, carry must not answer."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from carry.git import FORMAT_PATCH_ARGS, Entry, GitError, Ident, Repo
from carry.replay import hunks
from carry.replay.preimage import preimage
from carry.series import patches as patchmod

EXAMPLES = int(os.environ.get("CARRY_PROPERTY_EXAMPLES", "30")) * 4
WHO = Ident("A U Thor", "author@example.com", "1790000000 +0000")
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

# Few distinct lines, so that context repeats and a hunk could match in more than one place;
# trailing blanks and tabs (which `--whitespace=nowarn` keeps), and now and then a CR.
_common = st.sampled_from([b"a", b"b", b"c", b"", b"  ", b"a ", b"\tb", b"x\t", b"}"])
_rare = st.sampled_from([b"c\r", b"\r", b"\\ No newline at end of file", b"-- "])
_line = st.integers(0, 39).flatmap(
    lambda n: _rare if n == 0 else st.from_regex(rb"\A[ -~]{0,6}\Z") if n < 6 else _common)
_text = st.tuples(st.lists(_line, max_size=14), st.booleans(), st.booleans()).map(
    lambda t: b"".join(ln + b"\n" for ln in t[0]) + (b"end" if t[1] else b"")
    if not t[2] or b"\r" not in b"".join(t[0]) else b"".join(ln + b"\n" for ln in t[0]))
_names = [b"f", b"g.txt", b"d/h", b"d/e/i", b"sp ace", b"f2", b"d/e/j", b"f", b"g.txt", b"d/h",
          b"d/e/i", b"sp ace", b"f2", b"d/e/j", b"q\"uote"]  # a quoted name, now and then
_mode = st.sampled_from([b"100644", b"100755"])


@st.composite
def _edit(draw: st.DrawFn, text: bytes) -> bytes:
    """`text` with a few lines inserted, removed or replaced."""
    lines = hunks.lines_of(text)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines)))
        op = draw(st.sampled_from(["insert", "delete", "replace", "eol"]))
        new = draw(_line) + b"\n"
        if op == "insert":
            lines.insert(at, new)
        elif op == "delete" and at < len(lines):
            del lines[at]
        elif op == "replace" and at < len(lines):
            lines[at] = new
        elif op == "eol" and lines:
            last = lines[-1]
            lines[-1] = last[:-1] if last.endswith(b"\n") else last + b"\n"
    return b"".join(ln if ln.endswith(b"\n") or i == len(lines) - 1 else ln + b"\n"
                    for i, ln in enumerate(lines))


@st.composite
def _change(draw: st.DrawFn) -> tuple[dict[bytes, tuple[bytes, bytes]],
                                      dict[bytes, tuple[bytes, bytes]]]:
    """(files before, files after): path -> (mode, content)."""
    names = draw(st.lists(st.sampled_from(_names), unique=True, min_size=1, max_size=4))
    old = {n: (draw(_mode), draw(_text)) for n in names}
    new = dict(old)
    spare = sorted({n for n in _names if n not in old})
    for name in names:
        mode, text = old[name]
        what = draw(st.sampled_from(["edit", "edit", "edit", "keep", "delete", "rename",
                                     "mode"]))
        if what == "edit":
            new[name] = (mode, draw(_edit(text)))
        elif what == "delete":
            del new[name]
        elif what == "mode":
            new[name] = (b"100755" if mode == b"100644" else b"100644",
                         draw(_edit(text)) if draw(st.booleans()) else text)
        elif what == "rename" and spare:
            del new[name]
            to = spare.pop(draw(st.integers(0, len(spare) - 1)))
            new[to] = (mode, draw(_edit(text)) if draw(st.booleans()) else text)
    for name in draw(st.lists(st.sampled_from(spare), unique=True, max_size=2)) if spare else []:
        if name not in new:
            new[name] = (draw(_mode), draw(_text))
    return old, new


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Repo]:
    path = tmp_path_factory.mktemp("hunks")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    r = Repo.open(path)
    yield r
    r.close()


def _tree(repo: Repo, files: dict[bytes, tuple[bytes, bytes]]) -> str:
    changes: dict[bytes, Entry | None] = {
        p: (mode, repo.write_object("blob", text)) for p, (mode, text) in files.items()}
    return repo.edit_tree(None, changes) or repo.write_object("tree", b"")


def _git(repo: Repo, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=repo.path, check=True, capture_output=True
                          ).stdout


def _diff(repo: Repo, old: str, new: str, context: int, mail: bool) -> bytes:
    """The patch from tree `old` to tree `new`: `git diff`, or a format-patch mail as carry
    reads it (the `---` and diffstat come first)."""
    if not mail:
        return _git(repo, "-c", "core.quotePath=true", "diff", "--full-index", "-M",
                    f"-U{context}", "--src-prefix=a/", "--dst-prefix=b/", old, new)
    base = repo.write_commit(old, [], b"base\n", WHO, WHO)
    head = repo.write_commit(new, [base], b"change\n", WHO, WHO)
    out = _git(repo, "format-patch", "--stdout", f"-U{context}", *FORMAT_PATCH_ARGS,
               f"{base}..{head}")
    return patchmod.parse(1, "0001-change.patch", out).diff if b"\ndiff --git " in out else b""


def _after(repo: Repo, tree: str, before: dict[bytes, Entry],
           after: dict[bytes, Entry]) -> str:
    changes: dict[bytes, Entry | None] = {p: None for p in before if p not in after}
    changes.update(after)
    return repo.edit_tree(tree, changes) or repo.write_object("tree", b"")


def _answered_often(tally: Counter[str], share: float) -> None:
    """A property "when the fast path answers, it equals git" holds vacuously when it never
    answers: the fast path must take at least `share` of the patches git takes. The shares
    sit well under what 120 examples give (about 0.45 for the tree test, whose generator
    makes renames, mode changes and quoted names on purpose; about 0.9 for the hunk test)."""
    taken, left = tally["in-process"], tally["left to git"]
    assert taken + left >= EXAMPLES // 10, tally
    assert taken >= share * (taken + left), tally


def test_in_process_tree_is_git_applys(repo: Repo) -> None:
    tally: Counter[str] = Counter()

    @SETTINGS
    @given(change=_change(), context=st.sampled_from([3, 3, 1, 0, 5]), mail=st.booleans())
    def prop(change: tuple[dict[bytes, tuple[bytes, bytes]], dict[bytes, tuple[bytes, bytes]]],
             context: int, mail: bool) -> None:
        tally[_tree_is_git_applys(repo, change, context, mail)] += 1

    prop()
    _answered_often(tally, 0.25)


def _tree_is_git_applys(repo: Repo, change: tuple[
        dict[bytes, tuple[bytes, bytes]], dict[bytes, tuple[bytes, bytes]]], context: int,
        mail: bool) -> str:
    old, new = (_tree(repo, files) for files in change)
    diff = _diff(repo, old, new, context, mail)
    expect = preimage(diff) if diff else None
    if expect is None:
        event("no preimage")
        return "no preimage"
    before = {p: e for p in expect if (e := repo.tree_lookup(old, p)) is not None}
    ours = hunks.apply(diff, before, repo.read_object, repo.write_object)
    try:
        theirs = repo.apply_entries(diff, before)
    except GitError:
        event("git refuses")
        assert ours is None, diff
        return "git refuses"
    event("in-process" if ours is not None else "left to git")
    if ours is not None:
        assert ours == theirs, diff
        assert _after(repo, old, before, ours) == _after(repo, old, before, theirs)
        for _mode, sha in ours.values():
            assert repo.read_object(sha)[1] == "blob"
    return "in-process" if ours is not None else "left to git"


def test_hunks_apply_only_where_git_looks_first(repo: Repo) -> None:
    """A diff of `text`, applied to `text` edited some more (lines moved, context changed):
    where the in-process applier takes it, git takes it with the same bytes, and where git
    refuses it, the applier does too."""
    tally: Counter[str] = Counter()

    @SETTINGS
    @given(text=_text, data=st.data(), context=st.sampled_from([3, 3, 1, 0, 2]))
    def prop(text: bytes, data: st.DataObject, context: int) -> None:
        tally[_applies_where_git_looks_first(repo, text, data, context)] += 1

    prop()
    _answered_often(tally, 0.6)


def _applies_where_git_looks_first(repo: Repo, text: bytes, data: st.DataObject,
                                   context: int) -> str:
    edited = data.draw(_edit(text))
    target = data.draw(st.one_of(st.just(text), _edit(text)))
    old, new = _tree(repo, {b"f": (b"100644", text)}), _tree(repo, {b"f": (b"100644", edited)})
    diff = _diff(repo, old, new, context, False)
    if not diff or b"@@ -" not in diff:
        return "no hunk"
    try:
        (section,) = hunks.parse(diff)
    except hunks.NotExact:
        event("not parsed")
        return "not parsed"
    try:
        ours: bytes | None = hunks.apply_hunks(target, section.hunks)
    except hunks.NotExact:
        ours = None
    sha = repo.write_object("blob", target)
    try:
        theirs = repo.apply_entries(diff, {b"f": (b"100644", sha)})
    except GitError:
        event("git refuses")
        assert ours is None, (diff, target)
        return "git refuses"
    event("in-process" if ours is not None else "left to git")
    if ours is not None:
        assert theirs[b"f"][1] == hunks.blob_id(ours), (diff, target, ours)
    return "in-process" if ours is not None else "left to git"


def test_shapes_git_may_read_otherwise_are_left_to_git() -> None:
    index = b"index " + b"1" * 40 + b".." + b"2" * 40 + b" 100644\n"
    plain = b"diff --git a/f b/f\n" + index + b"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    assert hunks.parse(plain)[0].hunks[0].new == (b"a\n", b"c\n")
    for odd in [plain.replace(b" a\n", b"\n"),  # an empty context line with no blank
                plain.replace(b"+c\n", b"+c\n\\ No newline\n"),  # an odd marker
                plain.replace(b"@@ -1,2", b"@@ -1,3"),  # counts that do not add up
                plain.replace(b"+++ b/f", b"+++ b/g"),  # names that disagree
                plain.replace(b"a/f b/f", b"a/.git/f b/.git/f").replace(b"/f\n", b"/.git/f\n"),
                plain + b"stray\n",  # text after the last hunk
                plain.replace(b"index", b"copy from f\nindex"),
                plain.replace(b" a\n", b" a\r\n")]:
        with pytest.raises(hunks.NotExact):
            hunks.parse(odd)
    assert hunks.parse(plain + b"-- \n2.39.5\n\n")  # format-patch's signature is fine


def test_a_new_or_deleted_file_that_also_renames_or_changes_mode_is_left_to_git() -> None:
    new = (b"diff --git a/f b/f\nnew file mode 100644\nindex " + b"0" * 40 + b".." + b"2" * 40
           + b"\n--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+a\n")
    assert hunks.parse(new)[0].old_path is None
    for extra in (b"old mode 100644\nnew mode 100755\n", b"deleted file mode 100644\n",
                  b"similarity index 90%\nrename from g\nrename to f\n"):
        with pytest.raises(hunks.NotExact):
            hunks.parse(new.replace(b"new file mode", extra + b"new file mode"))
