"""Property: carry's in-process trees agree with git's. A tree edited by splicing the changed
entries into its bytes is the tree `git mktree` writes for the same entries; a tree foreseen
from another is recognised only when it is that tree; and a tree derived from another (a
merge's result against its upstream side) has the entries git's own parse gives, whatever the
names hold (spaces, digits, a name that is also a mode)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carry.git import Repo

NAMES = st.sampled_from([b"a", b"b", b"a b", b"0", b"00", b"40000", b"x.txt", b"d", b"e"])
MODES = st.sampled_from([b"100644", b"100755", b"120000"])
BLOBS = st.integers(0, 5)


def _git(repo: Path, *args: str, input: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True,
                          check=True).stdout.decode().strip()


def _mktree(repo: Path, items: dict[bytes, tuple[bytes, str]]) -> str:
    """The tree git itself writes for `items` (name -> (mode, id))."""
    kinds = {b"40000": "tree", b"160000": "commit"}
    lines = b"".join(mode + b" " + kinds.get(mode, "blob").encode() + b" " + sha.encode()
                     + b"\t" + name + b"\n" for name, (mode, sha) in items.items())
    return _git(repo, "mktree", "--missing", input=lines)


def _entries(blobs: list[str], spec: dict[bytes, tuple[bytes, int]]
             ) -> dict[bytes, tuple[bytes, str]]:
    return {name: (mode, blobs[k]) for name, (mode, k) in spec.items()}


specs = st.dictionaries(NAMES, st.tuples(MODES, BLOBS), max_size=6)
edits = st.dictionaries(NAMES, st.none() | st.tuples(MODES, BLOBS), max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs, edits, st.sampled_from([b"", b"sub/"]))
def test_edit_and_derive_agree_with_git(spec: dict[bytes, tuple[bytes, int]],
                                        edit: dict[bytes, tuple[bytes, int] | None],
                                        prefix: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="carry-trees-") as tmp:
        path = Path(tmp)
        _git(path, "init", "-q")
        blobs = [_git(path, "hash-object", "-w", "--stdin", input=b"blob %d\n" % k)
                 for k in range(6)]
        before = _entries(blobs, spec)
        after = dict(before)
        for name, value in edit.items():
            if value is None:
                after.pop(name, None)
            else:
                after[name] = (value[0], blobs[value[1]])
        keep = {b"keep": (b"100644", blobs[0])}

        def nest(items: dict[bytes, tuple[bytes, str]]) -> str:
            if not prefix:
                return _mktree(path, items)
            sub = _mktree(path, items) if items else ""
            return _mktree(path, {**keep, **({b"sub": (b"40000", sub)} if sub else {})})

        a, b = nest(before), nest(after)
        paths = {prefix + name for name in edit}
        editor, deriver, fresh = Repo.open(path), Repo.open(path), Repo.open(path)
        foreseer = Repo.open(path)
        try:
            changes = {p: (None if v is None else (v[0], blobs[v[1]]))
                       for p, v in ((prefix + n, v) for n, v in edit.items())}
            got = editor.edit_tree(a, changes)
            assert (got or _mktree(path, {})) == b
            # foreseen: right only for the very tree, and then parsed without reading it
            assert not foreseer.predict_tree(a, changes, blobs[0])
            if got is not None:
                assert foreseer.predict_tree(a, changes, b)
                assert foreseer.tree_items(b) == fresh.tree_items(b)
            subs = [items[b"sub"][1] for items in (deriver.tree_items(a),) if b"sub" in items]
            deriver.read_trees(subs)
            deriver.derive_tree(a, b, paths)
            for tree in [b, *(fresh.tree_items(b)[b"sub"][1] for _ in [1]
                              if b"sub" in fresh.tree_items(b))]:
                assert deriver.tree_items(tree) == fresh.tree_items(tree)
            assert deriver.tree_changes(a, b) == fresh.tree_changes(a, b)
        finally:
            for r in (editor, deriver, fresh, foreseer):
                r.close()
