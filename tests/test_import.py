"""`carry import`: stable bytes, versions and changelog, and the three ways to name commits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from carry.base.errors import CarryError
from carry.intake import importer
from carry.series import store as seriesmod
from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, run_carry


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mtime: re-importing the same range must change neither."""
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def _fork(upstream: CommitBuilder) -> CommitBuilder:
    upstream.commit("[BugFix] First\n\nWhy.\n", {"src/core.py": "def f():\n    return 2\n"},
                    author=TOBY)
    upstream.commit("[BugFix] Second\n\nAssisted-by: OpenAI Codex\n"
                    "Signed-off-by: logprobz <logprobz@example.com>\n",
                    {"src/core.py": "def f():\n    return 3\n"}, author=LOGPROBZ)
    upstream.branch("feature")
    return upstream


def test_import_writes_patches_and_manifest(upstream: CommitBuilder, series_root: Path) -> None:
    _fork(upstream)
    r = importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..feature"), today="2026-12-03")
    assert (r.version, r.changed, r.base) == (1, True, upstream.rev("base"))
    assert r.patches == ["0001-BugFix-First.patch", "0002-BugFix-Second.patch"]
    s = seriesmod.find(series_root, "demo")
    m = s.manifest
    assert (m.version, m.title, m.base.commit) == (1, "[BugFix] First", upstream.rev("base"))
    assert m.base.ref == "base"  # a --range without --base keeps the base's name as given
    assert [(c.version, c.date) for c in m.changelog] == [(1, "2026-12-03")]
    first = s.patches()[0].read()
    assert first.startswith(f"From {upstream.rev('feature~1')} Mon Sep 17 00:00:00 2001\n"
                            .encode())
    assert b"From: Toby Mao <toby@example.com>\n" in first


def test_reimport_same_range_changes_no_byte(upstream: CommitBuilder,
                                             series_root: Path) -> None:
    _fork(upstream)
    importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..feature", base="base"), today="2026-12-03")
    before = snapshot(series_root)
    again = importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..feature", base="base"), today="2027-01-01")
    assert (again.version, again.changed) == (1, False)
    assert snapshot(series_root) == before
    # The same commits named another way are still the same series.
    again = importer.run(series_root, "demo",
        importer.Source(str(upstream.path), branch="feature"), today="2027-01-01")
    assert (again.version, again.changed) == (1, False)
    assert snapshot(series_root) == before


def test_reimport_ignores_user_format_config(upstream: CommitBuilder, series_root: Path,
                                             tmp_path: Path) -> None:
    _fork(upstream)
    importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..feature", base="base"))
    before = snapshot(series_root)
    (tmp_path / "home" / ".gitconfig").write_text(
        "[format]\n\tsignature = mine\n\tnumbered = true\n\tthread = shallow\n"
        "\tsignOff = true\n\tcoverLetter = true\n\theaders = X-Foo: bar\n"
        "[diff]\n\tnoprefix = true\n\tmnemonicPrefix = true\n\talgorithm = histogram\n"
        "\trenames = false\n\tsubmodule = log\n[core]\n\tquotePath = false\n"
        "[mailinfo]\n\tscissors = true\n[i18n]\n\tcommitEncoding = ISO-8859-1\n")
    again = importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..feature", base="base"))
    assert not again.changed
    assert snapshot(series_root) == before


def test_changed_content_bumps_version_once(upstream: CommitBuilder,
                                            series_root: Path) -> None:
    _fork(upstream)
    importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..feature", base="base"), today="2026-12-03")
    upstream.commit("Third", {"README": "more\n"})
    r = importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..HEAD"), today="2026-12-04")
    assert (r.version, r.changed) == (2, True)
    m = seriesmod.find(series_root, "demo").manifest
    assert m.version == 2
    assert [(c.version, c.date) for c in m.changelog] == [(1, "2026-12-03"), (2, "2026-12-04")]
    assert m.changelog[1].summary.startswith("imported 3 patches from base..HEAD onto ")
    assert m.base.ref == "base"  # kept from the first import
    assert len(seriesmod.find(series_root, "demo").patches()) == 3
    # Fewer commits: the stale patch file goes.
    r = importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..feature~1"))
    assert r.version == 3
    assert [p.name for p in seriesmod.find(series_root, "demo").patches()] == [
        "0001-BugFix-First.patch"]


def test_amended_commit_is_a_new_version(upstream: CommitBuilder, series_root: Path) -> None:
    _fork(upstream)
    importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..feature"))
    git(upstream.path, "commit", "--amend", "-q", "--no-edit", "--allow-empty",
        "--author", "Toby Mao <toby@example.com>")
    r = importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..HEAD"))
    assert (r.version, r.changed) == (2, True)


def test_import_keeps_hand_written_manifest_fields(upstream: CommitBuilder,
                                                   series_root: Path) -> None:
    _fork(upstream)
    d = series_root / "demo"
    d.mkdir()
    (d / "series.toml").write_text(
        'schema = 1\nname = "demo"\ntitle = "Hand title"\nversion = 0\n'
        '[base]\nref = "base"\ncommit = ""\n'
        '[policy]\nrequired = ["Signed-off-by"]\n'
        '[[policy.exception]]\npatch = 1\ntrailers = ["Signed-off-by"]\nreason = "published"\n'
        '[[expect]]\npatch = 1\nauthor = "Toby Mao"\n')
    (d / "cover.md").write_text("# Cover\n")
    (d / "notes.txt").write_text("kept\n")
    r = importer.run(series_root, "demo",
        importer.Source(str(upstream.path), branch="feature"))
    assert r.base == upstream.rev("base")
    s = seriesmod.find(series_root, "demo")
    assert s.manifest.title == "Hand title"
    assert s.manifest.policy.exceptions[0].reason == "published"
    assert s.manifest.expected[0].author == "Toby Mao"
    assert s.cover == "# Cover\n"
    assert (d / "notes.txt").read_text() == "kept\n"


def test_branch_uses_merge_base_with_base_ref(upstream: CommitBuilder,
                                              series_root: Path) -> None:
    _fork(upstream)
    upstream.checkout("base")
    upstream.commit("Upstream moves on", {"README": "moved\n"})
    upstream.branch("main")
    upstream.checkout("feature")
    r = run_carry("import", "demo", "--repo", str(upstream.path), "--branch", "feature",
                  "--base", "main", "--series-dir", str(series_root), "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["base"] == upstream.rev("base")  # the merge base, not main's tip
    assert data["head"] == upstream.rev("feature")
    assert data["source"] == "branch feature"
    m = seriesmod.find(series_root, "demo").manifest
    # main's tip is another commit: the base is named by the commit the patches apply to
    assert (m.base.ref, m.base.commit) == (upstream.rev("base"), upstream.rev("base"))
    assert len(data["patches"]) == 2


def test_pr_imports_refs_pull_head(upstream: CommitBuilder, series_root: Path) -> None:
    _fork(upstream)
    git(upstream.path, "update-ref", "refs/pull/643/head", "feature")
    upstream.checkout("base")
    git(upstream.path, "branch", "-D", "feature")
    r = run_carry("import", "demo", "--repo", str(upstream.path), "--pr", "643", "--base",
                  "base", "--series-dir", str(series_root), "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["source"] == "pull request #643"
    assert data["head"] == git(upstream.path, "rev-parse", "refs/pull/643/head")
    assert len(data["patches"]) == 2


def test_pr_is_fetched_from_a_remote(upstream: CommitBuilder, series_root: Path,
                                     tmp_path: Path) -> None:
    _fork(upstream)
    git(upstream.path, "update-ref", "refs/pull/7/head", "feature")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream.path), str(clone))
    r = importer.run(series_root, "demo",
        importer.Source(str(clone), pr=7, base="origin/main~2"))
    assert r.source == "pull request #7"
    assert r.head == upstream.rev("feature")


def test_import_from_a_url_clones(upstream: CommitBuilder, series_root: Path) -> None:
    _fork(upstream)
    r = importer.run(series_root, "demo",
        importer.Source(f"file://{upstream.path}", range="base..feature"))
    assert len(r.patches) == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"range": "base..feature", "branch": "feature"}, "exactly one of"),
    ({"range": "feature"}, "must look like BASE..HEAD"),
    ({"range": "base...feature"}, "must look like BASE..HEAD"),
    ({"range": "feature..base"}, "has no commits"),
    ({"range": "nope..feature"}, "unknown revision 'nope'"),
    ({"range": "base..no pe"}, "unknown revision 'no pe'"),  # cat-file: `no pe^{commit} missing`
    ({"range": "base..x 1"}, "unknown revision 'x 1'"),
    ({"range": "base..feature:README"}, "unknown revision 'feature:README'"),  # a blob
    ({"range": "-x..feature"}, "unknown revision '-x'"),
    ({"branch": "feature"}, "need a base ref"),
    ({"branch": "nope", "base": "base"}, "unknown revision 'nope'"),
])
def test_bad_ranges(upstream: CommitBuilder, series_root: Path, kwargs: dict[str, object],
                    message: str) -> None:
    _fork(upstream)
    with pytest.raises(CarryError, match=message):
        importer.run(series_root, "demo",
                     importer.Source(str(upstream.path), **kwargs))  # type: ignore[arg-type]
    assert not (series_root / "demo").exists()


def test_merges_and_empty_commits_are_refused(upstream: CommitBuilder,
                                              series_root: Path) -> None:
    _fork(upstream)
    upstream.commit("Empty", allow_empty=True)
    with pytest.raises(CarryError, match="refusing to lose any"):
        importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..HEAD"))
    upstream.checkout("base")
    upstream.commit("Side", {"side": "x\n"})
    git(upstream.path, "merge", "-q", "--no-edit", "feature")
    with pytest.raises(CarryError, match="merge commit"):
        importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..HEAD"))
    assert not (series_root / "demo").exists()


def test_bad_series_name(upstream: CommitBuilder, series_root: Path) -> None:
    _fork(upstream)
    with pytest.raises(CarryError, match="not a series name"):
        importer.run(series_root, "Bad Name",
        importer.Source(str(upstream.path), range="base..feature"))



def test_import_from_a_url_that_is_no_repository(series_root: Path, tmp_path: Path) -> None:
    r = run_carry("import", "demo", "--repo", f"file://{tmp_path}/nothing", "--range",
                  "a..b", "--series-dir", str(series_root))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "cannot clone" in r.err and "does not appear to be a git repository" in r.err
    assert not (series_root / "demo").exists()
