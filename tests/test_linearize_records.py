"""The merge-linearizing import on real git: it says which patches it changed from their fork
commits and why, `check --against-repo` knows them (F16 #13), and a branch that merged an
older upstream after a newer one stays on the newer one (F15)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from carry.intake import importer
from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, run_carry, util
from tests.test_merge_import import _merge_upstream, _project

SIGN = "\n\nSigned-off-by: Toby Mao <toby@example.com>\n"


def _carried_and_absorbed(tmp_path: Path) -> tuple[CommitBuilder, str]:
    """A fork branch whose first patch is carried cleanly across a merge of upstream that
    moved its context (its diff changes), and whose second takes the merge's hand
    resolution."""
    b = _project(tmp_path)
    git(b.path, "checkout", "-q", "-b", "dev")
    b.commit("Fork: h5" + SIGN, {"src/util.py": util(h5=55)}, author=TOBY)
    b.commit("Fork: h12" + SIGN, {"src/util.py": util(h5=55, h12=120)}, author=LOGPROBZ)
    b.checkout("main")
    b.commit("Upstream: h4 and h12 (#1)", {"src/util.py": util(h4=44, h12=121)})
    b.checkout("dev")
    merge = _merge_upstream(b, "main", {"src/util.py": util(h4=44, h5=55, h12=122)})
    b.commit("Fork: last" + SIGN, {"src/last.py": "LAST = 1\n"}, author=TOBY)
    return b, merge


def test_check_knows_the_patches_the_import_linearized(tmp_path: Path) -> None:
    b, merge = _carried_and_absorbed(tmp_path)
    root = tmp_path / "series"
    sd = ("--series-dir", str(root))
    imp = run_carry("import", "lin", "--repo", str(b.path), "--branch", "dev", "--base", "main",
                    *sd)
    assert imp.code == 0, imp.err
    # every patch whose diff is not its fork commit's is named, with why
    assert "0001-Fork-h5.patch carried across merge" in imp.out, imp.out
    assert "0002-Fork-h12.patch took its tree" in imp.out, imp.out
    records = tomllib.loads((root / "lin" / "series.toml").read_text())["linearized"]
    assert [r["patch"][:4] for r in records] == ["0001", "0002"]
    r = run_carry("check", "lin", "--against-repo", str(b.path), "--json", *sd)
    assert r.code == 0, r.out + r.err
    report = json.loads(r.out)
    found = {p["file"][:4]: [f["kind"] + ": " + f["message"] for f in p["findings"]]
             for p in report["patches"]}
    assert not any("patch-id differs" in f for fs in found.values() for f in fs), found
    assert any(f.startswith("note: linearized: carried across merge " + merge[:12])
               for f in found["0001"]), found
    assert any(f.startswith("note: linearized: took its tree at merge " + merge[:12])
               for f in found["0002"]), found
    assert found["0003"] == []
    # a patch changed after the import is compared as any other
    p = next((root / "lin" / "patches").glob("0001-*"))
    p.write_bytes(p.read_bytes().replace(b"+    return 55", b"+    return 56"))
    r = run_carry("check", "lin", "--against-repo", str(b.path), *sd)
    assert r.code == 1 and "the patch changed since" in r.out, r.out


def _older_after_newer(tmp_path: Path, change: bool) -> tuple[CommitBuilder, str, str]:
    """dev merges upstream's newer commit, then (as `git merge` never would on its own: a
    merge made by hand) its older one; `change` makes that merge edit the tree too."""
    b = _project(tmp_path)
    older = b.commit("Upstream: h1 (#1)", {"src/util.py": util(h1=10)})
    newer = b.commit("Upstream: h9 (#2)", {"src/util.py": util(h1=10, h9=900)})
    git(b.path, "checkout", "-q", "-b", "dev", "base")
    b.commit("Fork: h5" + SIGN, {"src/util.py": util(h5=55)}, author=TOBY)
    _merge_upstream(b, "main", {"src/util.py": util(h1=10, h5=55, h9=900)})
    b.commit("Fork: h15" + SIGN, {"src/util.py": util(h1=10, h5=55, h9=900, h15=150)},
             author=TOBY)
    if change:
        b.write({"README": "changed in the merge\n"})
        git(b.path, "add", "-A")
    tree = git(b.path, "write-tree")
    old = git(b.path, "commit-tree", tree, "-p", "HEAD", "-p", older, "-m",
              "Merge tag 'older' into dev")
    git(b.path, "update-ref", "HEAD", old)
    git(b.path, "reset", "-q", "--hard")
    b.commit("Fork: h17" + SIGN, {"src/util.py": util(h1=10, h5=55, h9=900, h15=150, h17=170)},
             author=TOBY)
    return b, newer, old


def test_an_older_upstream_merged_after_a_newer_one_keeps_the_newer_base(
        tmp_path: Path) -> None:
    """F15: the series was based back on the older upstream, and the fork's patch before
    that merge carried upstream's own h9 line."""
    b, newer, old = _older_after_newer(tmp_path, change=False)
    root = tmp_path / "series"
    r = importer.run(root, "older", importer.Source(str(b.path), branch="dev", base="main"))
    assert r.base == newer
    assert r.linearized is not None and r.linearized.passed == [old]
    for p in sorted((root / "older" / "patches").iterdir()):
        assert b"return 900" not in p.read_bytes(), p.name  # upstream's line is upstream's
    res = run_carry("rebase", "older", "--repo", str(b.path), "--onto", "main", "--json",
                    "--series-dir", str(root))
    assert res.code == 0, res.err
    [row] = json.loads(res.out)
    assert b.rev(f"{row['head']}^{{tree}}") == b.rev("dev^{tree}")


def test_an_older_upstream_merge_that_changes_the_tree_is_refused_in_one_line(
        tmp_path: Path) -> None:
    b, newer, old = _older_after_newer(tmp_path, change=True)
    root = tmp_path / "series"
    r = run_carry("import", "older", "--repo", str(b.path), "--branch", "dev", "--base", "main",
                  "--series-dir", str(root))
    assert r.code == 2 and r.out == "", r
    [line] = r.err.splitlines()
    assert old[:12] in line and newer[:12] in line and "older" in line
    assert not (root / "older").exists()
