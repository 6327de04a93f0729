"""`clean_merges` answers whether many `merge_onto`s are clean with at most one `git
merge-tree` (why's probes ask it). Each case is a real merge: what git's own merge of the
whole trees says is the truth, and `clean_merges` must say the same, or None where it cannot
tell. The cases where a shortcut would be wrong (a rename git follows, a folder in the way,
an attribute that only matches the real path) are here so that a shortcut that ignores them
fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from carry.git import Repo
from tests.conftest import CommitBuilder, git

TEXT = "".join(f"line {i}\n" for i in range(1, 31))
Files = dict[str, str | None]


def edit(n: int, to: str, text: str = TEXT) -> str:
    """`text` with its line `n` replaced."""
    lines = text.splitlines(keepends=True)
    lines[n - 1] = to + "\n"
    return "".join(lines)


def case(up: CommitBuilder, base: Files, ours: Files, theirs: Files
         ) -> tuple[str, str, str, set[bytes]]:
    """A merge as `merge_onto` takes it: ours' tree, the base commit, theirs (a child of the
    base) and the paths theirs changes."""
    up.checkout("base")
    b = up.commit("base", base)
    t = up.commit("theirs", theirs)
    up.checkout(b)
    o = up.commit("ours", ours)
    paths = git(up.path, "diff", "--name-only", "--no-renames", b, t).split()
    return git(up.path, "rev-parse", f"{o}^{{tree}}"), b, t, {p.encode() for p in paths}


CASES: dict[str, tuple[Files, Files, Files, bool | None]] = {
    # name: base, ours' changes, theirs' changes, what clean_merges must answer
    "apart": ({"f.txt": TEXT}, {"f.txt": edit(3, "ours")}, {"f.txt": edit(25, "theirs")},
              True),
    "same line": ({"f.txt": TEXT}, {"f.txt": edit(3, "ours")}, {"f.txt": edit(3, "theirs")},
                  False),
    "ours kept it": ({"f.txt": TEXT, "g.txt": "g\n"}, {"g.txt": "G\n"},
                     {"f.txt": edit(3, "theirs")}, True),
    "modify/delete": ({"f.txt": TEXT}, {"f.txt": None}, {"f.txt": edit(3, "theirs")},
                      False),
    "delete/modify": ({"f.txt": TEXT}, {"f.txt": edit(3, "ours")}, {"f.txt": None}, False),
    "both deleted": ({"f.txt": TEXT, "g.txt": "g\n"}, {"f.txt": None}, {"f.txt": None}, True),
    "theirs adds": ({"f.txt": TEXT}, {"f.txt": edit(3, "ours")}, {"new/n.txt": "n\n"}, True),
    # ours renamed the file theirs changes: git follows the rename, clean
    "ours renamed it": ({"f.txt": TEXT}, {"f.txt": None, "moved.txt": edit(30, "ours")},
                        {"f.txt": edit(3, "theirs")}, None),
    # theirs renamed the file ours changes: git follows the rename, clean
    "theirs renamed it": ({"f.txt": TEXT}, {"f.txt": edit(3, "ours")},
                          {"f.txt": None, "moved.txt": edit(30, "theirs")}, None),
    # theirs adds under a folder that ours made a file: a file/directory conflict
    "a file in the way": ({"f.txt": TEXT}, {"d": "a file\n"}, {"d/n.txt": "n\n"}, None),
    # ours renamed the folder theirs adds to: git moves the new file, a conflict
    "a folder renamed": ({"d/a.txt": TEXT, "d/b.txt": TEXT + "b\n"},
                         {"d/a.txt": None, "d/b.txt": None, "e/a.txt": TEXT,
                          "e/b.txt": TEXT + "b\n"}, {"d/n.txt": "n\n"}, None),
}


@pytest.fixture
def repo(upstream: CommitBuilder) -> Repo:
    return Repo.open(upstream.path)


@pytest.mark.parametrize("name", CASES)
def test_each_answer_is_gits_own(upstream: CommitBuilder, repo: Repo, name: str) -> None:
    base, ours, theirs, expected = CASES[name]
    ask = case(upstream, base, ours, theirs)
    truth = repo.merge_onto(*ask[:3]).clean  # git's merge, whole trees, no shortcut
    assert repo.clean_merges([ask]) == [expected]
    assert expected is None or expected == truth, (name, truth)


def test_many_merges_of_one_path_in_one_process(upstream: CommitBuilder, repo: Repo,
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The same path merged three ways (clean, conflicting, clean) and another path: each
    answer is its own merge's, from one `git merge-tree` (the path asked again goes under
    its own folder)."""
    asks = [case(upstream, {"f.txt": TEXT}, {"f.txt": edit(3, "ours")},
                 {"f.txt": edit(25, "theirs")}),
            case(upstream, {"f.txt": TEXT}, {"f.txt": edit(3, "ours")},
                 {"f.txt": edit(3, "theirs")}),
            case(upstream, {"f.txt": TEXT}, {"f.txt": edit(10, "ours")},
                 {"f.txt": edit(20, "theirs")}),
            case(upstream, {"g.txt": TEXT}, {"g.txt": edit(5, "ours")},
                 {"g.txt": edit(5, "theirs")})]
    truth = [repo.merge_onto(*ask[:3]).clean for ask in asks]
    assert truth == [True, False, True, False]
    trace = tmp_path / "merges.txt"
    monkeypatch.setenv("CARRY_TRACE_MERGES", str(trace))
    assert repo.clean_merges(asks) == truth
    assert len(trace.read_text().splitlines()) == 1


def test_an_attribute_only_the_real_path_has_keeps_that_merge_apart(
        upstream: CommitBuilder, repo: Repo) -> None:
    """`/f.txt merge=union` matches f.txt and not f.txt under another folder: the second
    merge of f.txt cannot go under `carry-merge-1/`, and is left to its own merge."""
    (upstream.path / ".git" / "info" / "attributes").write_text("/f.txt merge=union\n")
    asks = [case(upstream, {"f.txt": TEXT}, {"f.txt": edit(3, "ours")},
                 {"f.txt": edit(3, "theirs")}),
            case(upstream, {"f.txt": TEXT}, {"f.txt": edit(4, "ours")},
                 {"f.txt": edit(4, "theirs")})]
    assert [repo.merge_onto(*ask[:3]).clean for ask in asks] == [True, True]  # union
    assert repo.clean_merges(asks) == [True, None]
