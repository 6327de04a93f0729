"""`carry import` of a fork branch that merged upstream, on real git repositories.

The branch's merges carry their own resolutions (a conflict resolved by hand, an evil edit):
the import makes the fork's own commits a linear series on the last upstream commit merged,
keeps every commit's author, date and message byte for byte, says which patch absorbed which
part of which merge, and the series rebased onto that upstream stops nowhere and ends on the
branch tip's exact tree.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from carry.base.errors import CarryError
from carry.intake import importer
from carry.series import patches as patchmod
from carry.series import store as seriesmod
from carry.series import trailers as trailermod
from tests.conftest import LOGPROBZ, TOBY, UTIL, CommitBuilder, git, run_carry

CORE = "def f():\n    return 1\n\n\ndef g():\n    return 1\n"
SIGN_TOBY = "Signed-off-by: Toby Mao <toby@example.com>\n"
SIGN_LOGPROBZ = "Assisted-by: OpenAI Codex\nSigned-off-by: logprobz <logprobz@example.com>\n"
# An identity git's porcelain cannot write: quotes and a comma at the ends, a -0000 zone.
ODD = b'"Quoted, Name" Jr. <odd@example.com> 1790012345 -0000'


def _util(**changes: int) -> str:
    text = UTIL
    for name, value in changes.items():
        text = text.replace(f"def {name}():\n    return {name[1:]}\n",
                            f"def {name}():\n    return {value}\n")
    return text


def _project(tmp_path: Path) -> CommitBuilder:
    b = CommitBuilder.init(tmp_path / "vllm")
    b.commit("Initial import", {"src/core.py": CORE, "src/util.py": UTIL, "README": "project\n",
                                "docs/notes.md": "notes\n"})
    b.tag("base")
    return b


def _raw_commit(b: CommitBuilder, message: bytes, files: dict[str, str | None]) -> str:
    """A commit with the ODD author, written as a raw object (the porcelain would clean it)."""
    b.write(files)  # type: ignore[arg-type]
    tree = git(b.path, "write-tree")
    raw = (f"tree {tree}\nparent {b.rev()}\n".encode() + b"author " + ODD +
           b"\ncommitter C O Mitter <committer@example.com> 1790012345 +0000\n\n" + message)
    sha = git(b.path, "hash-object", "-t", "commit", "-w", "--stdin", input=raw)
    git(b.path, "update-ref", "HEAD", sha)
    return sha


def _merge_upstream(b: CommitBuilder, upstream: str, resolved: dict[str, str]) -> str:
    """`git merge` of upstream into the checked-out fork branch, its conflicts resolved by
    hand with `resolved` (which may also change paths git merged cleanly: an evil merge)."""
    git(b.path, "merge", "-q", "--no-ff", "--no-commit", upstream, check=False)
    b.write(resolved)  # type: ignore[arg-type]
    b.clock[0] += 3600
    env = {"GIT_AUTHOR_NAME": LOGPROBZ[0], "GIT_AUTHOR_EMAIL": LOGPROBZ[1],
           "GIT_AUTHOR_DATE": f"@{b.clock[0]} +0100", "GIT_COMMITTER_DATE": f"@{b.clock[0]} +0000"}
    git(b.path, "commit", "-q", "-m",
        "Merge remote-tracking branch 'upstream/main' into dev", env=env)
    return b.rev()


def _auto_merge_differs(b: CommitBuilder, merge: str) -> bool:
    """git's automatic merge of the merge's parents conflicts, and its tree is not the
    merge's own: the merge carries resolutions of its own."""
    proc = subprocess.run(["git", "merge-tree", "--write-tree", "--name-only", "--no-messages",
                           f"{merge}^1", f"{merge}^2"], cwd=b.path, capture_output=True)
    auto = proc.stdout.decode().split()[0]
    return proc.returncode == 1 and auto != b.rev(f"{merge}^{{tree}}")


def _sixteen(tmp_path: Path) -> tuple[CommitBuilder, str, str]:
    """5 fork commits by two authors (and one odd identity), a merge of upstream resolved by
    hand with an evil edit, then 11 fork commits. Returns (repo, the merge, the upstream)."""
    b = _project(tmp_path)
    git(b.path, "checkout", "-q", "-b", "dev")
    b.commit("[BugFix] f returns 2\n\nThe old value was off by one.\n\n" + SIGN_TOBY,
             {"src/core.py": CORE.replace("return 1\n\n\ndef g", "return 2\n\n\ndef g")},
             author=TOBY, date="@1790001234 -0730")
    b.commit("Add the new module\n\n" + SIGN_LOGPROBZ, {"src/new.py": "NEW = 1\n"},
             author=LOGPROBZ)
    b.commit("Tune h5 and add c3\n\n" + SIGN_TOBY,
             {"src/util.py": _util(h5=55), "src/c3.py": "C3 = 3\n"}, author=TOBY)
    _raw_commit(b, b"Tune h7 and say so  \n\nBody quoting a diff:\n---\ndiff --git a/x b/x\n",
                {"src/util.py": _util(h5=55, h7=77), "README": "project, tuned\n"})
    b.commit("Add extra\n\n" + SIGN_LOGPROBZ, {"src/extra.py": "EXTRA = 5\n"}, author=LOGPROBZ)
    b.checkout("main")
    b.commit("Upstream: f returns 10 (#101)", {"src/core.py": CORE.replace(
        "return 1\n\n\ndef g", "return 10\n\n\ndef g")})
    b.commit("Upstream: h5 returns 500 (#102)", {"src/util.py": _util(h5=500)})
    b.commit("Upstream: add up.py (#103)", {"src/up.py": "UP = 1\n"})
    up = b.rev()
    b.checkout("dev")
    merge = _merge_upstream(b, "main", {
        "src/core.py": CORE.replace("return 1\n\n\ndef g", "return 12\n\n\ndef g"),
        "src/util.py": _util(h5=555, h7=77),
        "docs/notes.md": "notes\nmerged upstream by hand\n",  # evil: no side changed it
    })
    authors = [TOBY, LOGPROBZ]
    for i in range(11):
        trailers = SIGN_TOBY if i % 2 == 0 else SIGN_LOGPROBZ
        files = {f"src/after{i}.py": f"AFTER = {i}\n"}
        if i == 3:
            files["src/core.py"] = CORE.replace("return 1\n\n\ndef g", "return 12\n\n\ndef g") \
                .replace("def g():\n    return 1\n", "def g():\n    return 3\n")
        if i == 6:
            files["src/util.py"] = _util(h5=555, h7=77, h9=99)
        b.commit(f"After the merge {i}\n\nStep {i}.\n\n{trailers}", files,
                 author=authors[i % 2])
    return b, merge, up


def _fork_commits(b: CommitBuilder) -> list[str]:
    """The fork's own commits, oldest first (main is the upstream the branch merged last)."""
    return git(b.path, "rev-list", "--reverse", "--topo-order", "--no-merges",
               "main..dev").split()


def _originals(b: CommitBuilder) -> list[bytes]:
    return [b.raw(sha) for sha in _fork_commits(b)]


def _author_line(raw: bytes) -> bytes:
    return next(ln for ln in raw.split(b"\n\n", 1)[0].split(b"\n") if ln.startswith(b"author "))


def test_sixteen_commits_around_a_hand_resolved_merge(tmp_path: Path) -> None:
    b, merge, up = _sixteen(tmp_path)
    assert _auto_merge_differs(b, merge)
    root = tmp_path / "series"
    r = run_carry("import", "mx", "--repo", str(b.path), "--branch", "dev", "--base", "main",
                  "--series-dir", str(root), "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["base"] == up and data["head"] == b.rev("dev") and len(data["patches"]) == 16
    lin = data["linearized"]
    assert lin["merges"] == [{"merge": merge, "upstream": up, "subject":
                              "Merge remote-tracking branch 'upstream/main' into dev"}]
    took = sorted((a["patch"][:4], a["part"], a["paths"], a["source"][:4])
                  for a in lin["absorbed"])
    assert took == [
        # 0001 alone touched core.py: it takes the merge's hand resolution of it
        ("0001", "resolution", ["src/core.py"], ""),
        # 0003's h5 conflicts with upstream's: 0005 took it over (through the merge's tree);
        # 0004's own edit of util.py (h7) carries cleanly, so 0004 keeps it
        ("0005", "deferred", ["src/util.py"], "0003"),
        # 0005, just before the merge: the hand resolution of util.py and the evil edit
        ("0005", "tree", ["docs/notes.md", "src/util.py"], ""),
    ]
    assert lin["dropped"] == []

    s = seriesmod.find(root, "mx")
    assert s.manifest.base.commit == up
    assert "linearised merge " + merge[:12] in s.manifest.changelog[-1].summary
    originals = _originals(b)
    patches = [patchmod.load(p.path, p.number) for p in s.patches()]
    for raw, p, sha in zip(originals, patches, _fork_commits(b), strict=True):
        assert _author_line(raw) == b"author " + p.author.line().encode()
        assert raw.split(b"\n\n", 1)[1] == p.message  # trailers and all, byte for byte
        assert p.origin == sha  # the patch names the fork's own commit
    assert [p.trailers for p in patches] == [
        trailermod.parse(raw.split(b"\n\n", 1)[1]) for raw in originals]
    assert sum(bool(p.trailers) for p in patches) == 15  # all but the odd one
    # Written with the original's author: only the identity git cannot mail needs the header.
    assert [p.number for p in patches if "author" in p.verbatim] == [4]

    r = run_carry("rebase", "mx", "--repo", str(b.path), "--onto", "main",
                  "--series-dir", str(root), "--json")
    assert r.code == 0, r.err + r.out
    [res] = json.loads(r.out)
    assert res["status"] == "applied" and [p["status"] for p in res["patches"]] == \
        ["applied"] * 16
    assert b.rev(f"{res['head']}^{{tree}}") == b.rev("dev^{tree}")
    rebased = git(b.path, "rev-list", "--reverse", f"main..{res['head']}").split()
    for raw, sha in zip(originals, rebased, strict=True):
        new = b.raw(sha)
        assert _author_line(new) == _author_line(raw)
        assert new.split(b"\n\n", 1)[1] == raw.split(b"\n\n", 1)[1]


def test_reimport_changes_no_byte_and_text_says_what_was_absorbed(tmp_path: Path) -> None:
    b, merge, _ = _sixteen(tmp_path)
    root = tmp_path / "series"
    args = ("import", "mx", "--repo", str(b.path), "--branch", "dev", "--base", "main",
            "--series-dir", str(root))
    first = run_carry(*args)
    assert first.code == 0, first.err
    assert f"  linearised merge {merge[:12]} of upstream" in first.out
    assert "    0001-BugFix-f-returns-2.patch took its resolution of src/core.py\n" in first.out
    assert ("0005-Add-extra.patch took over 0003-Tune-h5-and-add-c3.patch's change to "
            "src/util.py") in " ".join(first.out.split())  # wrapped to the terminal's width
    before = {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    again = run_carry(*args)
    assert again.code == 0 and "unchanged at v1" in again.out
    assert {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()} == before


def test_two_merges_of_upstream(tmp_path: Path) -> None:
    b = _project(tmp_path)
    git(b.path, "checkout", "-q", "-b", "dev")
    b.commit("Fork: f returns 2", {"src/core.py": CORE.replace("return 1\n\n\ndef g",
                                                                "return 2\n\n\ndef g")},
             author=TOBY)
    b.commit("Fork: h5", {"src/util.py": _util(h5=55)}, author=LOGPROBZ)
    b.checkout("main")
    b.commit("Upstream: f returns 10 (#1)", {"src/core.py": CORE.replace(
        "return 1\n\n\ndef g", "return 10\n\n\ndef g")})
    up1 = b.rev()
    b.checkout("dev")
    m1 = _merge_upstream(b, "main", {"src/core.py": CORE.replace(
        "return 1\n\n\ndef g", "return 12\n\n\ndef g")})
    b.commit("Fork: g returns 3", {"src/core.py": CORE.replace(
        "return 1\n\n\ndef g", "return 12\n\n\ndef g").replace(
        "def g():\n    return 1\n", "def g():\n    return 3\n")}, author=TOBY)
    b.commit("Fork: h9", {"src/util.py": _util(h5=55, h9=99)}, author=LOGPROBZ)
    b.checkout("main")
    b.commit("Upstream: h9 returns 900 (#2)", {"src/util.py": _util(h9=900)})
    up2 = b.rev()
    b.checkout("dev")
    m2 = _merge_upstream(b, "main", {"src/util.py": _util(h5=55, h9=999),
                                     "README": "project, merged twice\n"})
    b.commit("Fork: last", {"src/last.py": "LAST = 1\n"}, author=TOBY)
    assert _auto_merge_differs(b, m2)
    root = tmp_path / "series"
    r = importer.run(root, "two", importer.Source(str(b.path), branch="dev", base="main"))
    assert r.base == up2 and len(r.patches) == 5 and r.linearized is not None
    assert [(m.merge, m.upstream) for m in r.linearized.merges] == [(m1, up1), (m2, up2)]
    took = {(a.patch[:4], a.merge, a.part): a.paths for a in r.linearized.absorbed}
    assert took == {("0001", m1, "resolution"): ["src/core.py"],  # its alone at the first
                    ("0004", m2, "tree"): ["README", "src/util.py"]}  # h9 by hand, evil README
    s = seriesmod.find(root, "two")
    originals = _originals(b)
    for raw, p in zip(originals, s.patches(), strict=True):
        patch = patchmod.load(p.path, p.number)
        assert _author_line(raw) == b"author " + patch.author.line().encode()
        assert raw.split(b"\n\n", 1)[1] == patch.message
    r3 = run_carry("rebase", "two", "--repo", str(b.path), "--onto", "main",
                   "--series-dir", str(root), "--json")
    assert r3.code == 0, r3.err + r3.out
    [res] = json.loads(r3.out)
    assert res["status"] == "applied" and b.rev(f"{res['head']}^{{tree}}") == \
        b.rev("dev^{tree}")


def test_a_resolution_of_a_path_only_one_earlier_commit_touched(tmp_path: Path) -> None:
    b = _project(tmp_path)
    git(b.path, "checkout", "-q", "-b", "dev")
    b.commit("Fork: f returns 2", {"src/core.py": CORE.replace("return 1\n\n\ndef g",
                                                                "return 2\n\n\ndef g")},
             author=TOBY)
    b.commit("Fork: readme", {"README": "fork\n"}, author=LOGPROBZ)
    b.commit("Fork: notes", {"docs/notes.md": "fork notes\n"}, author=TOBY)
    b.checkout("main")
    b.commit("Upstream: f returns 10 (#1)", {"src/core.py": CORE.replace(
        "return 1\n\n\ndef g", "return 10\n\n\ndef g")})
    b.checkout("dev")
    resolved = CORE.replace("return 1\n\n\ndef g", "return 12\n\n\ndef g")
    merge = _merge_upstream(b, "main", {"src/core.py": resolved})
    assert _auto_merge_differs(b, merge)
    root = tmp_path / "series"
    r = importer.run(root, "one", importer.Source(str(b.path), branch="dev", base="main"))
    assert r.linearized is not None
    assert [(a.patch, a.part, a.paths) for a in r.linearized.absorbed] == [
        ("0001-Fork-f-returns-2.patch", "resolution", ["src/core.py"])]
    r2 = run_carry("apply", "one", "--repo", str(b.path), "--onto", "main", "--branch", "lin",
                   "--series-dir", str(root))
    assert r2.code == 0, r2.err
    # The first patch already holds the merge's resolution, and the others leave core.py be.
    assert git(b.path, "show", "lin~2:src/core.py") + "\n" == resolved
    assert git(b.path, "diff", "--name-only", "lin~2", "lin") == "README\ndocs/notes.md"
    assert b.rev("lin^{tree}") == b.rev("dev^{tree}")


def test_a_later_commit_absorbs_what_an_earlier_one_could_not_carry(tmp_path: Path) -> None:
    """0001's h5 conflicts with upstream's; 0002 takes h5 back and tunes h9: the two together
    carry cleanly, so 0002 absorbs 0001's change to util.py, not the commit before the merge."""
    b = _project(tmp_path)
    git(b.path, "checkout", "-q", "-b", "dev")
    b.commit("Fork: h5", {"src/util.py": _util(h5=55), "src/a.py": "A = 1\n"}, author=TOBY)
    b.commit("Fork: h5 back, h9", {"src/util.py": _util(h9=99), "src/b.py": "B = 1\n"},
             author=LOGPROBZ)
    b.commit("Fork: c", {"src/c.py": "C = 1\n"}, author=TOBY)
    b.checkout("main")
    b.commit("Upstream: h5 returns 500 (#5)", {"src/util.py": _util(h5=500)})
    b.checkout("dev")
    _merge_upstream(b, "main", {})
    root = tmp_path / "series"
    r = importer.run(root, "later", importer.Source(str(b.path), branch="dev", base="main"))
    assert r.linearized is not None
    assert [(a.patch, a.part, a.paths, a.source) for a in r.linearized.absorbed] == [
        ("0002-Fork-h5-back-h9.patch", "deferred", ["src/util.py"], "0001-Fork-h5.patch")]
    r2 = run_carry("apply", "later", "--repo", str(b.path), "--onto", "main", "--branch", "lin",
                   "--series-dir", str(root))
    assert r2.code == 0, r2.err
    assert git(b.path, "diff", "--name-only", "main", "lin~2") == "src/a.py"
    assert git(b.path, "show", "lin~1:src/util.py") == _util(h5=500, h9=99).rstrip("\n")
    assert b.rev("lin^{tree}") == b.rev("dev^{tree}")


def test_a_merge_before_any_fork_commit_is_absorbed_by_the_first(tmp_path: Path) -> None:
    b = _project(tmp_path)
    git(b.path, "checkout", "-q", "-b", "dev")
    b.checkout("main")
    b.commit("Upstream: f returns 10 (#1)", {"src/core.py": CORE.replace(
        "return 1\n\n\ndef g", "return 10\n\n\ndef g")})
    b.checkout("dev")
    merge = _merge_upstream(b, "main", {"README": "project, merged\n"})  # evil, nothing before
    b.commit("Fork: a", {"src/a.py": "A = 1\n"}, author=TOBY)
    b.commit("Fork: b", {"src/b.py": "B = 1\n"}, author=LOGPROBZ)
    root = tmp_path / "series"
    r = importer.run(root, "first", importer.Source(str(b.path), branch="dev", base="main"))
    assert r.base == b.rev("main") and r.linearized is not None
    assert [(a.patch, a.merge, a.part, a.paths) for a in r.linearized.absorbed] == [
        ("0001-Fork-a.patch", merge, "tree", ["README"])]
    assert run_carry("apply", "first", "--repo", str(b.path), "--onto", "main", "--branch",
                     "lin", "--series-dir", str(root)).code == 0
    assert b.rev("lin^{tree}") == b.rev("dev^{tree}")


def test_a_range_that_reaches_a_root_commit_is_refused(tmp_path: Path) -> None:
    """The base is another history the branch merged: the range reaches the first commit."""
    b = _bad(tmp_path)
    git(b.path, "checkout", "-q", "--orphan", "other")
    git(b.path, "rm", "-q", "-rf", ".")
    b.commit("Another project", {"elsewhere.txt": "x\n"})
    b.checkout("dev")
    git(b.path, "merge", "-q", "--no-edit", "--allow-unrelated-histories", "other")
    err = _one_line_error(b, tmp_path, "--range", "other..dev")
    assert "has no parent" in err and b.rev("base")[:12] in err


def test_a_commit_upstream_already_has_is_dropped_and_said(tmp_path: Path) -> None:
    b = _project(tmp_path)
    git(b.path, "checkout", "-q", "-b", "dev")
    b.commit("Fork: h5", {"src/util.py": _util(h5=55)}, author=TOBY)
    b.commit("Fork: readme", {"README": "fork\n"}, author=LOGPROBZ)
    b.checkout("main")
    b.commit("Upstream: take the fork's h5 (#7)", {"src/util.py": _util(h5=55)})
    b.checkout("dev")
    merge = _merge_upstream(b, "main", {})
    b.commit("Fork: after", {"src/after.py": "A = 1\n"}, author=TOBY)
    r = importer.run(tmp_path / "series", "d",
        importer.Source(str(b.path), branch="dev", base="main"))
    assert r.linearized is not None and len(r.patches) == 2
    [d] = r.linearized.dropped
    assert (d.commit, d.merge) == (b.rev("dev~3"), merge) and "already has its change" in d.why


def _bad(tmp_path: Path) -> CommitBuilder:
    b = _project(tmp_path)
    git(b.path, "checkout", "-q", "-b", "dev")
    b.commit("Fork: one", {"src/one.py": "ONE = 1\n"}, author=TOBY)
    return b


def _one_line_error(b: CommitBuilder, tmp_path: Path, *where: str) -> str:
    root = tmp_path / "series"
    r = run_carry("import", "bad", "--repo", str(b.path), *where, "--series-dir", str(root))
    assert r.code == 2 and r.out == "" and len(r.err.strip().splitlines()) == 1, r
    assert r.err.startswith("carry: error: ") and "Traceback" not in r.err
    assert not (root / "bad").exists()
    return r.err


def test_an_octopus_merge_is_refused_in_one_line(tmp_path: Path) -> None:
    b = _bad(tmp_path)
    b.checkout("main")
    b.commit("Upstream: a (#1)", {"src/a.py": "A = 1\n"})
    git(b.path, "checkout", "-q", "-b", "side", "base")
    b.commit("Upstream side: b", {"src/b.py": "B = 1\n"})
    b.checkout("dev")
    git(b.path, "merge", "-q", "--no-edit", "main", "side")
    assert len(b.raw("dev").split(b"\n\n")[0].split(b"\nparent ")) == 4  # three parents
    err = _one_line_error(b, tmp_path, "--range", "base..dev")
    assert "octopus merge" in err and b.rev("dev")[:12] in err


def test_a_merge_of_an_unrelated_history_is_refused_in_one_line(tmp_path: Path) -> None:
    b = _bad(tmp_path)
    git(b.path, "checkout", "-q", "--orphan", "other")
    git(b.path, "rm", "-q", "-rf", ".")
    b.commit("Another project", {"elsewhere.txt": "x\n"})
    b.checkout("dev")
    git(b.path, "merge", "-q", "--no-edit", "--allow-unrelated-histories", "other")
    err = _one_line_error(b, tmp_path, "--branch", "dev", "--base", "main")
    assert "unrelated history" in err


def test_a_merge_of_two_fork_branches_is_refused_in_one_line(tmp_path: Path) -> None:
    b = _bad(tmp_path)
    git(b.path, "checkout", "-q", "-b", "topic", "base")
    b.commit("Fork topic: two", {"src/two.py": "TWO = 2\n"}, author=LOGPROBZ)
    b.checkout("dev")
    git(b.path, "merge", "-q", "--no-edit", "topic")
    err = _one_line_error(b, tmp_path, "--branch", "dev", "--base", "main")
    assert f"merge commit {b.rev('dev')[:12]} whose second parent {b.rev('topic')[:12]}" in err
    assert "merges of upstream only" in err


@pytest.mark.parametrize("quoted, raw", [
    ('"\\303\\251 x.txt"', "é x.txt".encode()),
    ('"tab\\there"', b"tab\there"),
    ("plain.txt", b"plain.txt"),
])
def test_git_quoted_paths_are_read_back(quoted: str, raw: bytes) -> None:
    from carry.intake.linearize import git_path

    assert git_path(quoted) == raw


def test_a_range_without_merges_imports_as_before(tmp_path: Path) -> None:
    """No merge: nothing is rewritten, the patches name the commits themselves."""
    b = _bad(tmp_path)
    r = importer.run(tmp_path / "series", "plain",
        importer.Source(str(b.path), branch="dev", base="main"))
    assert r.linearized is None
    s = seriesmod.find(tmp_path / "series", "plain")
    assert patchmod.load(s.patches()[0].path, 1).origin == b.rev("dev")
    assert s.manifest.base.commit == b.rev("base")


def test_nothing_of_its_own_is_refused(tmp_path: Path) -> None:
    b = _project(tmp_path)
    git(b.path, "checkout", "-q", "-b", "dev")
    b.checkout("main")
    b.commit("Upstream: a (#1)", {"src/a.py": "A = 1\n"})
    b.checkout("dev")
    git(b.path, "merge", "-q", "--no-ff", "--no-edit", "main")
    with pytest.raises(CarryError, match="no commits of its own"):
        importer.run(tmp_path / "series", "none",
            importer.Source(str(b.path), branch="dev", base="main"))
    # From the fork point the upstream commits are in the range: not a merge of upstream.
    with pytest.raises(CarryError, match="second parent .* is not in the history of the base"):
        importer.run(tmp_path / "series", "none", importer.Source(str(b.path), range="base..dev"))
    assert not (tmp_path / "series" / "none").exists()
