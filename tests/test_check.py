"""`carry check`: per-patch authorship and trailers, the policy with its exceptions, the
expectations, and `--against-repo` against the original commits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from carry.base.errors import CarryError
from carry.intake import check as checkmod
from carry.intake import importer
from carry.series import store as seriesmod
from tests.conftest import LOGPROBZ, THOR, TOBY, CommitBuilder, git, run_carry

REPO = Path(__file__).resolve().parent.parent
SOB = "Signed-off-by: logprobz <logprobz@example.com>\n"
AI = "Assisted-by: OpenAI Codex\n"

POLICY = """schema = 1
name = "demo"
title = "Demo"
[base]
ref = "base"
[policy]
required = ["Signed-off-by"]
ai_attribution = "Assisted-by"
[[policy.exception]]
patch = 3
trailers = ["Signed-off-by"]
reason = "published without trailers; left unamended to preserve published history"
[[expect]]
patch = 1
author = "Toby Mao"
[[expect]]
patch = 3
author = "logprobz"
[[expect]]
patch = 4
author = "logprobz"
trailers = ["Assisted-by: OpenAI Codex", "Signed-off-by"]
"""


def flagship_like(b: CommitBuilder) -> None:
    """Two commits by one author, a follow-up without trailers, then trailered follow-ups."""
    b.commit("[BugFix] Keep a state below each boundary\n\nWhy.\n\n"
             "Signed-off-by: Toby Mao <toby@example.com>\n", {"src/core.py": "v1\n"},
             author=TOBY, date="@1790000000 -0700")
    b.commit("[BugFix] Rename to get_replay_boundaries\n\nSigned-off-by: Toby Mao "
             "<toby@example.com>\n", {"src/core.py": "v2\n"}, author=TOBY)
    b.commit("Preserve sparse hybrid replay boundaries\n\nNo trailers here.\n",
             {"src/util.py": "u\n"}, author=LOGPROBZ)
    b.commit("Pass the lookup alignment\n\nBody.\n\n" + AI + SOB, {"src/a.py": "a\n"},
             author=LOGPROBZ)
    b.branch("feature")


@pytest.fixture
def demo(upstream: CommitBuilder, series_root: Path) -> seriesmod.Series:
    flagship_like(upstream)
    (series_root / "demo").mkdir()
    (series_root / "demo" / "series.toml").write_text(POLICY)
    importer.run(series_root, "demo",
        importer.Source(str(upstream.path), branch="feature"))
    return seriesmod.find(series_root, "demo")


def findings(report: checkmod.CheckReport, number: int) -> list[tuple[str, str]]:
    p = next(p for p in report.patches if p.number == number)
    return [(f.kind, f.message) for f in p.findings]


def test_clean_series_reports_authors_dates_trailers(demo: seriesmod.Series) -> None:
    report = checkmod.run(demo)
    assert report.status == "ok" and report.exit_code == 0
    assert [(p.author, p.email) for p in report.patches] == [
        ("Toby Mao", "toby@example.com")] * 2 + [("logprobz", "logprobz@example.com")] * 2
    assert report.patches[0].date == "1790000000 -0700"
    assert report.patches[3].trailers == [
        {"key": "Assisted-by", "value": "OpenAI Codex"},
        {"key": "Signed-off-by", "value": "logprobz <logprobz@example.com>"}]
    # The recorded exception is an exception with its reason, never a failure.
    assert findings(report, 3) == [("exception", "no Signed-off-by: published without "
                                    "trailers; left unamended to preserve published history")]
    assert report.patches[2].ok


def test_violations(upstream: CommitBuilder, series_root: Path) -> None:
    flagship_like(upstream)
    upstream.commit("No sign-off\n\nBody.\n", {"b": "b\n"}, author=LOGPROBZ)
    upstream.commit("Malformed\n\nBody.\n\nSigned-off-by: logprobz\nCo-authored-by: "
                    "nobody\nReviewed-by: \n", {"c": "c\n"}, author=LOGPROBZ)
    (series_root / "demo").mkdir()
    (series_root / "demo" / "series.toml").write_text(POLICY)
    importer.run(series_root, "demo",
        importer.Source(str(upstream.path), range="base..HEAD"))
    report = checkmod.run(seriesmod.find(series_root, "demo"))
    assert report.status == "violations" and report.exit_code == 1
    assert findings(report, 5) == [("violation", "missing required trailer Signed-off-by")]
    assert ("violation", "malformed Signed-off-by: 'logprobz' is not 'Name <email>'") in \
        findings(report, 6)
    assert ("violation", "malformed Co-authored-by: 'nobody' is not 'Name <email>'") in \
        findings(report, 6)
    assert any("Reviewed-by" in m for _, m in findings(report, 6))
    assert [p.number for p in report.patches if not p.ok] == [5, 6]


def test_unreadable_patch_is_bad_input(demo: seriesmod.Series) -> None:
    demo.patches()[0].path.write_bytes(b"this is not a patch\n")
    with pytest.raises(CarryError, match="0001-.*not a git format-patch file") as info:
        checkmod.run(demo)
    assert info.value.exit_code == 2


def test_authorless_patch_is_a_violation(demo: seriesmod.Series) -> None:
    files = demo.patches()
    text = files[1].path.read_bytes()
    files[1].path.write_bytes(text.replace(b"From: Toby Mao <toby@example.com>\n", b""))
    report = checkmod.run(demo)
    assert report.status == "violations"
    ((kind, msg),) = findings(report, 2)
    assert kind == "violation" and msg.startswith("no author: ")
    assert report.patches[2].ok and report.patches[3].ok


def test_expectations(demo: seriesmod.Series) -> None:
    m = demo.manifest
    m.expected[0].author = "Somebody Else"
    m.expected[2].trailers = ["Assisted-by: Claude"]
    m.expected[1].trailers = ["Signed-off-by", "Assisted-by"]
    report = checkmod.run(demo)
    assert ("violation", "expected author 'Somebody Else', got 'Toby Mao'") in \
        findings(report, 1)
    assert ("violation", "expected trailer 'Assisted-by: Claude' is absent") in \
        findings(report, 4)
    assert findings(report, 3)[1:] == [
        ("violation", "expected trailer 'Signed-off-by' is absent"),
        ("violation", "expected trailer 'Assisted-by' is absent")]


def test_against_repo_clean(demo: seriesmod.Series, upstream: CommitBuilder) -> None:
    report = checkmod.run(demo, against=_repo(upstream))
    assert report.status == "ok", [p.findings for p in report.patches]


def _repo(b: CommitBuilder) -> checkmod.Repo:
    return checkmod.Repo.open(b.path)


def test_against_repo_sees_an_amended_original(demo: seriesmod.Series,
                                                upstream: CommitBuilder) -> None:
    # Amend the last original commit after the import: new message, date and change.
    (upstream.path / "src/a.py").write_text("a, amended\n")
    git(upstream.path, "add", "src/a.py")
    msg = "Pass the lookup alignment\n\nBody.\n\n" + AI + SOB + \
        "Signed-off-by: A U Thor <author@example.com>\n"
    git(upstream.path, "commit", "-q", "--amend", "-m", msg, "--date", "@1790009999 +0100",
        env={"GIT_AUTHOR_NAME": "logprobz", "GIT_AUTHOR_EMAIL": "logprobz@example.com"})
    upstream.branch("feature")  # the PR branch moves with the amend; nothing reaches the old
    report = checkmod.run(demo, against=_repo(upstream))
    assert report.status == "violations"
    kinds = [m.split(":")[0] for k, m in findings(report, 4) if k == "difference"]
    assert kinds == [f"original commit {report.patches[3].origin[:12]} is no longer on any "
                     "branch; compared with " + upstream.rev()[:12] + ", which replaced it",
                     "author date", "trailers differ from the original commit",
                     "message differs from the original commit",
                     "patch-id differs from the original commit"]
    assert all(p.ok for p in report.patches[:3])


def test_against_repo_sees_edited_patches(demo: seriesmod.Series,
                                          upstream: CommitBuilder) -> None:
    files = demo.patches()
    text = files[0].path.read_bytes()
    files[0].path.write_bytes(text.replace(b"From: Toby Mao <toby@example.com>",
                                           b"From: A U Thor <author@example.com>")
                              .replace(b"-0700", b"+0000"))
    text = files[1].path.read_bytes()
    files[1].path.write_bytes(text.replace(b"+v2", b"+v2 edited"))
    report = checkmod.run(demo, against=_repo(upstream))
    assert [m.split(":")[0] for k, m in findings(report, 1) if k == "difference"] == [
        "author", "author date"]
    assert findings(report, 2) == [("difference", "patch-id differs from the original commit")]


def test_against_repo_without_the_commits(demo: seriesmod.Series, tmp_path: Path) -> None:
    other = CommitBuilder.init(tmp_path / "other")
    other.commit("Unrelated", {"x": "x\n"}, author=THOR)
    report = checkmod.run(demo, against=checkmod.Repo.open(other.path))
    assert report.status == "violations"
    assert all(f.message.endswith(f"is not in {other.path}") for p in report.patches
               for f in p.findings if f.kind == "difference")


def test_check_cli_json_and_text(demo: seriesmod.Series, upstream: CommitBuilder) -> None:
    r = run_carry("check", "demo", "--json", "--series-dir", str(demo.root.parent),
                  "--against-repo", str(upstream.path))
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["status"] == "ok"
    assert data["policy"]["required"] == ["Signed-off-by"]
    assert [p["author"] for p in data["patches"]] == ["Toby Mao"] * 2 + ["logprobz"] * 2
    assert data["patches"][2]["findings"] == [{"kind": "exception", "message": (
        "no Signed-off-by: published without trailers; left unamended to preserve "
        "published history")}]
    r = run_carry("check", "demo", "--series-dir", str(demo.root.parent), "-v")
    assert r.code == 0, r.err
    assert "author Toby Mao <toby@example.com>  date 2026-09-21 07:13 -0700" in r.out
    assert data["patches"][0]["date"] == "1790000000 -0700"  # raw in JSON
    assert "Assisted-by: OpenAI Codex" in r.out
    assert "exception: no Signed-off-by: published without trailers" in r.out
    brief = run_carry("check", "demo", "--series-dir", str(demo.root.parent))
    assert brief.code == 0, brief.err  # by default: the count, and only the patch with a finding
    assert "  4 patches: 4 ok, 0 FAIL; each patch's author, date and trailers with -v" in brief.out
    [shown] = [ln for ln in brief.out.splitlines() if ln.startswith("[")]
    assert shown.startswith(f"[ok] {data['patches'][2]['file']}  Preserve sparse")
    assert shown.endswith("\u2026") and len(shown) == 80  # the subject cut to the width
    assert "exception: no Signed-off-by: published without trailers" in brief.out
    assert "author Toby Mao" not in brief.out and "  Assisted-by: OpenAI" not in brief.out


def test_flagship_reports_the_policy_and_six_expected_patches(tmp_path: Path) -> None:
    r = run_carry("check", "mamba-sparse-retention", "--json", cwd=REPO)
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["status"] == "pending"
    assert data["policy"]["required"] == ["Signed-off-by"]
    assert data["policy"]["ai_attribution"] == "Assisted-by"
    assert data["policy"]["exceptions"][0]["patch"] == 3
    assert {"kind": "note", "message": "patches not imported yet: 6 expected"} in \
        data["findings"]
    assert [(e["patch"], e["author"]) for e in data["expected"]] == [
        (1, "Toby Mao"), (2, "Toby Mao"), (3, "logprobz"), (4, "logprobz"), (5, "logprobz"),
        (6, "logprobz")]
    # The same, from a copy found through the environment.
    shutil.copytree(REPO / "series", tmp_path / "copy")
    r = run_carry("check", "mamba-sparse-retention", env={"CARRY_SERIES_DIR":
                                                          str(tmp_path / "copy")})
    assert r.code == 0, r.err
    assert "note: patches not imported yet: 6 expected" in r.out


def test_check_dco_names_a_few_unsigned_patches_in_its_series_line(
        upstream: CommitBuilder, series_root: Path) -> None:
    """Walk: on a 53-patch fork series the series' DCO line named every patch (5,000
    characters on one line); it names three and counts the rest, each patch keeps its own."""
    git(upstream.path, "checkout", "-q", "-b", "feature", "base")
    for i in range(6):
        upstream.commit(f"Unsigned {i}", {f"src/u{i}.py": f"U = {i}\n"})
    importer.run(series_root, "many",
        importer.Source(str(upstream.path), range="base..feature"))
    r = run_carry("check", "many", "--dco", "--series-dir", str(series_root))
    assert r.code == 1
    said = " ".join(r.out.split())  # folded to the terminal's width
    line = said[said.index("6 patch(es) lack"):said.index("and 3 more") + len("and 3 more")]
    assert "0004-" not in line and len(line) < 300
    assert r.out.count("DCO: no Signed-off-by from its author") == 6
