"""`carry ci`, the CI job: every series onto every manifest target, rebased without writing a
ref and validated with the local engine, on the synthetic upstream of tests/validate."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from carry.series import store as seriesmod
from carry.series.store import Target
from tests.conftest import CommitBuilder, git, run_carry
from tests.validate import synthetic


@pytest.fixture
def project(tmp_path: Path, series_root: Path) -> CommitBuilder:
    up = synthetic.upstream_project(tmp_path / "calc")
    synthetic.import_series(series_root, up.path, "good", "fix", sys.executable)
    synthetic.import_series(series_root, up.path, "bad", "broken", sys.executable)
    for name in ("good", "bad"):
        s = seriesmod.find(series_root, name)
        s.manifest.targets = [Target(name="release", tags="v*"), Target(name="main", ref="main")]
        seriesmod.save_manifest(s)
    return up


def _ci(series_root: Path, up: CommitBuilder, tmp_path: Path, *extra: str) -> tuple[int, dict]:
    r = run_carry("ci", "--repo", str(up.path), "--engine", "local", "--out",
                  str(tmp_path / "out"), "--json", *extra,
                  env={"CARRY_SERIES_DIR": str(series_root)})
    assert r.code in (0, 1), r.err
    return r.code, json.loads(r.out)


def test_job_validates_every_series_on_every_target(project: CommitBuilder, series_root: Path,
                                                     tmp_path: Path) -> None:
    refs_before = git(project.path, "for-each-ref", "refs/heads", "refs/tags")
    code, job = _ci(series_root, project, tmp_path)
    rows = {(r["series"], r["target"]): r for r in job["rows"]}
    assert sorted(rows) == [("bad", "main"), ("bad", "release@v2"),
                            ("good", "main"), ("good", "release@v2")]
    assert code == 1 and job["status"] == "failed"
    for target in ("main", "release@v2"):
        assert rows[("good", target)]["validate"].endswith("passed")
        assert rows[("bad", target)]["validate"].endswith("failed")
        assert "1 failed" in rows[("bad", target)]["summary"]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| good | main | applied |" in summary and "## carry: failed" in summary
    report = json.loads(Path(rows[("good", "main")]["report"]).read_text())
    assert report["status"] == "passed" and report["head"] == rows[("good", "main")]["head"]
    assert git(project.path, "for-each-ref", "refs/heads", "refs/tags") == refs_before


def test_job_reports_a_conflicting_target(project: CommitBuilder, series_root: Path,
                                          tmp_path: Path) -> None:
    project.checkout("main")
    project.commit("Rework retained()", {"calc/core.py": "def retained(n, block):\n"
                                                         "    return []\n"})
    code, job = _ci(series_root, project, tmp_path, "--series", "good", "--target", "main")
    (row,) = job["rows"]
    assert code == 1 and row["rebase"] == "conflict" and row["validate"] == "not run"
    assert "calc/core.py" in row["conflict"]


def test_job_bad_input_is_one_line(project: CommitBuilder, series_root: Path,
                                   tmp_path: Path) -> None:
    r = run_carry("ci", "--repo", str(project.path), "--engine", "local", "--target", "nope",
                  "--out", str(tmp_path / "out"), env={"CARRY_SERIES_DIR": str(series_root)})
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "no series has any of the targets nope" in r.err
