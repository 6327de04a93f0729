"""An import never silently goes back: re-importing the fork's range after a refreshed rebase (its
patches are v1's, the series is at v2) is refused in one line naming the versions, and so is an
import that changes a patch a recorded resolution names; --force goes back. The manifest's base
always names the commit the patches apply to. Real git throughout; one series folder lives in a
git checkout (versions as tags), the others outside one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from carry.series import store as seriesmod
from tests.conftest import CommitBuilder, Result, git, run_carry, util


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture
def refreshed(upstream: CommitBuilder, series_root: Path) -> CommitBuilder:
    """`feature` (two patches on base) imported as v1, then rebased with --refresh onto a
    main that moved under them (same file, other lines): v2, the rebased patches."""
    up = upstream
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("One", {"src/util.py": util(h1=11)})
    up.commit("Two", {"src/util.py": util(h1=11, h10=100)})
    up.checkout("main")
    up.commit("Upstream h5", {"src/util.py": util(h5=55)})
    sd = ("--series-dir", str(series_root))
    r = run_carry("import", "demo", "--repo", str(up.path), "--range", "base..feature", *sd)
    assert r.code == 0, r.err
    r = run_carry("rebase", "demo", "--repo", str(up.path), "--onto", "main", "--refresh", *sd)
    assert r.code == 0, r.out + r.err
    assert seriesmod.find(series_root, "demo").manifest.version == 2
    return up


def _import(up: CommitBuilder, root: Path, *args: str) -> Result:
    return run_carry("import", "demo", "--repo", str(up.path), *args, "--series-dir",
                     str(root))


def test_reimporting_the_old_range_after_a_refresh_is_refused_and_force_goes_back(
        refreshed: CommitBuilder, series_root: Path) -> None:
    up = refreshed
    before = _tree(series_root)
    r = _import(up, series_root, "--range", "base..feature")
    assert r.code == 2, r.out + r.err
    err = r.err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    assert err[0].startswith(
        f"carry: error: these patches are v1's; demo is at v2 (rebased onto main "
        f"{up.rev('main')[:12]}); carry import --force to go back"), err[0]
    assert _tree(series_root) == before  # nothing written

    r = _import(up, series_root, "--range", "base..feature", "--json")
    assert r.code == 2 and json.loads(r.out)["exit"] == 2

    r = _import(up, series_root, "--range", "base..feature", "--force")
    assert r.code == 0, r.err
    s = seriesmod.find(series_root, "demo")
    assert s.manifest.version == 3
    v1 = series_root / "demo" / ".versions" / "v1" / "patches"
    assert {p.name: p.read() for p in s.patches()} == {
        f.name: f.read_bytes() for f in v1.iterdir()}
    assert (s.manifest.base.ref, s.manifest.base.commit) == ("base", up.rev("base"))


def test_some_patches_going_back_are_named_and_new_content_is_not_refused(
        refreshed: CommitBuilder, series_root: Path) -> None:
    up = refreshed
    up.checkout("feature")
    up.commit("Three", {"src/core.py": "def f():\n    return 3\n"})
    r = _import(up, series_root, "--range", "base..feature")
    assert r.code == 2
    assert "carry: error: 0001, 0002 are v1's; demo is at v2" in r.err

    # A range of new content (rebased by hand onto main) is not going back.
    git(up.path, "checkout", "-q", "-b", "onmain", "main")
    up.commit("One", {"src/util.py": util(h1=12, h5=55)})
    r = _import(up, series_root, "--range", "main..onmain")
    assert r.code == 0, r.err
    m = seriesmod.find(series_root, "demo").manifest
    assert (m.version, m.base.ref, m.base.commit) == (3, "main", up.rev("main"))


def test_an_import_that_changes_a_patch_with_a_recorded_resolution_is_refused(
        upstream: CommitBuilder, series_root: Path) -> None:
    up = upstream
    one, two = "@1790000100 +0200", "@1790000200 +0200"  # the same dates in every branch

    def branch(name: str, core: str, h10: int | None) -> None:
        git(up.path, "checkout", "-q", "-b", name, "base")
        up.commit("One", {"src/core.py": f"def f():\n    return {core}\n"}, date=one)
        if h10 is not None:
            up.commit("Two", {"src/util.py": util(h10=h10)}, date=two)

    branch("feature", "2", 100)
    branch("amend1", "5", 100)  # 0001 amended, 0002 the same
    branch("amend2", "5", 101)  # 0002 amended too
    branch("drop2", "5", None)  # 0002 gone
    assert _import(up, series_root, "--range", "base..feature").code == 0
    second = seriesmod.find(series_root, "demo").patches()[1].name
    res = series_root / "demo" / "resolutions"
    res.mkdir()
    assert second.startswith("0002-")
    (res / "0002-0123456789abcdef.txt").write_text("carry resolution 1\n")

    r = _import(up, series_root, "--range", "base..amend1")  # the resolution still holds
    assert r.code == 0, r.err
    before = _tree(series_root)
    r = _import(up, series_root, "--range", "base..amend2")
    assert r.code == 2, r.out
    assert ("carry: error: it would change 0002, for which demo records a conflict "
            "resolution (resolutions/0002-0123456789abcdef.txt); carry import --force to go "
            "back"
            ) in r.err
    assert _tree(series_root) == before
    # dropped rather than changed
    r = _import(up, series_root, "--range", "base..drop2")
    assert r.code == 2 and "(resolutions/0002-0123456789abcdef.txt)" in r.err
    assert _import(up, series_root, "--range", "base..drop2", "--force").code == 0
    assert len(seriesmod.find(series_root, "demo").patches()) == 1


def test_versions_kept_as_tags_in_a_checkout_are_compared_too(
        upstream: CommitBuilder, tmp_path: Path) -> None:
    toolkit = CommitBuilder.init(tmp_path / "toolkit")
    toolkit.commit("toolkit", {"README": "x\n"})
    root = toolkit.path / "series"
    up = upstream
    git(up.path, "checkout", "-q", "-b", "feature", "base")
    up.commit("One", {"src/util.py": util(h1=11)})
    assert _import(up, root, "--range", "base..feature").code == 0
    git(up.path, "checkout", "-q", "-b", "other", "base")
    up.commit("One, amended", {"src/util.py": util(h1=12)})
    assert _import(up, root, "--range", "base..other").code == 0
    assert git(toolkit.path, "tag", "--list", "series/demo/*").split() == [
        "series/demo/v1", "series/demo/v2"]
    assert not (root / "demo" / ".versions").exists()
    r = _import(up, root, "--range", "base..feature")
    assert r.code == 2 and "these patches are v1's; demo is at v2 (imported 1 patches " \
        "from base..other onto " in r.err, r.err


def test_the_base_names_the_commit_the_patches_apply_to(upstream: CommitBuilder,
                                                        series_root: Path) -> None:
    """`init` records the fork's dev tip as the base; an import of a branch that left dev
    earlier must not keep that name beside the older commit it applies to."""
    up = upstream
    git(up.path, "checkout", "-q", "-b", "feature", "base")
    up.commit("One", {"src/util.py": util(h1=11)})
    up.checkout("main")
    up.commit("Dev moves on", {"README": "dev\n"})
    up.branch("dev")
    sd = ("--series-dir", str(series_root))
    assert run_carry("init", "demo", "--upstream", "a/b", "--fork", "c/b", "--base", "dev",
                     *sd).code == 0
    r = _import(up, series_root, "--branch", "feature")
    assert r.code == 0, r.err
    m = seriesmod.find(series_root, "demo").manifest
    assert (m.base.ref, m.base.commit) == (up.rev("base"), up.rev("base"))
    shown = run_carry("series", "show", "demo", *sd).out
    assert f"  base {up.rev('base')[:12]}\n" in shown and "dev" not in shown

    # a range names its base as given; a --base that is the base commit keeps its name
    r = _import(up, series_root, "--branch", "feature", "--base", "base")
    m = seriesmod.find(series_root, "demo").manifest
    assert r.code == 0 and (m.base.ref, m.base.commit) == ("base", up.rev("base"))


def test_a_resolution_named_with_arabic_indic_digits_does_not_slip_past_the_guard(
        upstream: CommitBuilder, series_root: Path) -> None:
    """`\\d` matches `٠٠٠٢`: the name passed for patch 0002's, and the guard then missed it.
    Such a name is no resolution file name: the import is refused in one line, unchanged."""
    up = upstream
    git(up.path, "checkout", "-q", "-b", "feature", "base")
    up.commit("One", {"src/core.py": "def f():\n    return 2\n"})
    up.commit("Two", {"src/util.py": util(h10=100)})
    git(up.path, "checkout", "-q", "-b", "amend2", "base")
    up.commit("One", {"src/core.py": "def f():\n    return 2\n"})
    up.commit("Two", {"src/util.py": util(h10=101)})
    assert _import(up, series_root, "--range", "base..feature").code == 0
    res = series_root / "demo" / "resolutions"
    res.mkdir()
    (res / "\u0660\u0660\u0660\u0662-0123456789abcdef.txt").write_text("carry resolution 1\n")
    before = _tree(series_root)
    r = _import(up, series_root, "--range", "base..amend2")
    assert r.code == 2 and "Traceback" not in r.err, r.out + r.err
    assert len(r.err.strip().splitlines()) == 1 and "not a resolution file name" in r.err
    assert _tree(series_root) == before
