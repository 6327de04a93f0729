"""`carry releases`, the ledger and `carry ci matrix|run`: a synthetic upstream with several
tags, a PEP 691 JSON index served on 127.0.0.1 (a yanked release, a pre-release, a release whose
tag is not there yet), and the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from carry.series import store as seriesmod
from carry.series.store import Target
from tests.conftest import CommitBuilder, git, run_carry
from tests.validate import synthetic

CI = Path(__file__).resolve().parents[1] / "ci"
FILES = [
    {"filename": "calc-1.tar.gz", "yanked": False},
    {"filename": "calc-2.tar.gz"},
    {"filename": "calc-2-py3-none-any.whl"},
    {"filename": "calc-3.tar.gz", "yanked": "broken build"},
    {"filename": "calc-4rc1.tar.gz"},
    {"filename": "calc-5.tar.gz"},
    {"filename": "other-9.tar.gz"},
]


class _Index(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/simple/calc/":
            assert "application/vnd.pypi.simple.v1+json" in self.headers["Accept"]
            body = json.dumps({"meta": {"api-version": "1.1"}, "name": "calc",
                               "files": FILES}).encode()
            ctype = "application/vnd.pypi.simple.v1+json"
        elif self.path == "/garbage/calc/":
            body, ctype = b"<html>not json</html>", "text/html"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def index() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def project(tmp_path: Path, series_root: Path) -> CommitBuilder:
    up = synthetic.upstream_project(tmp_path / "calc")
    up.checkout("main")
    up.commit("Release 3", {"NEWS": "3\n"})
    up.tag("v3")
    up.commit("Release 4rc1", {"NEWS": "4rc1\n"})
    up.tag("v4rc1")
    synthetic.import_series(series_root, up.path, "good", "fix", sys.executable)
    s = seriesmod.find(series_root, "good")
    s.manifest.targets = [Target(name="release", tags="v*", kind="release"),
                          Target(name="main", ref="main", kind="main")]
    s.manifest.upstream.repo, s.manifest.upstream.package = "example/calc", "calc"
    seriesmod.save_manifest(s)
    return up


def _carry(root: Path, *args: str) -> tuple[int, str, str]:
    r = run_carry(*args, env={"CARRY_SERIES_DIR": str(root)})
    return r.code, r.out, r.err


def _ledger(path: Path, up: CommitBuilder, tag: str) -> None:
    rec = {"series": "good", "version": 1, "target": "release", "ref": tag,
           "upstream": up.rev(tag), "tree": "", "plan": "", "image": "", "outcome": "passed",
           "time": "2026-12-01T00:00:00Z"}
    path.write_text(json.dumps({"schema": 1, "records": [rec]}))


def test_releases_lists_every_tag_since_the_last_validated(
        project: CommitBuilder, series_root: Path, tmp_path: Path, index: str) -> None:
    ledger = tmp_path / "ledger.json"
    _ledger(ledger, project, "v1")
    code, out, err = _carry(series_root, "releases", "good", "--repo", str(project.path),
                            "--index-url", f"{index}/simple", "--ledger", str(ledger), "--json")
    assert code == 0, err
    rows = [(r["target"], r["version"], r["ref"], r["status"])
            for r in json.loads(out)["releases"]]
    assert rows == [
        ("release", "2", "v2", "pending"),
        ("release", "3", "v3", "yanked"),
        ("release", "5", "", "waiting for the tag"),
        ("main", "", "main", "pending"),
    ]  # v1 validated, 4rc1 a pre-release the target does not ask for


def test_releases_without_ledger_takes_the_newest_and_prereleases_on_request(
        project: CommitBuilder, series_root: Path, tmp_path: Path, index: str) -> None:
    s = seriesmod.find(series_root, "good")
    s.manifest.targets[0].prereleases = True
    seriesmod.save_manifest(s)
    code, out, err = _carry(series_root, "releases", "good", "--repo", str(project.path),
                            "--index-url", f"{index}/simple", "--ledger",
                            str(tmp_path / "none.json"), "--json")
    assert code == 0, err
    rows = [(r["version"], r["status"]) for r in json.loads(out)["releases"]
            if r["target"] == "release"]
    assert rows == [("4rc1", "pending"), ("5", "waiting for the tag")]


def test_releases_since_and_the_package_option(
        project: CommitBuilder, series_root: Path, tmp_path: Path, index: str) -> None:
    code, out, err = _carry(series_root, "releases", "good", "--repo", str(project.path),
                            "--index-url", f"{index}/simple", "--package", "calc",
                            "--since", "v1", "--ledger", str(tmp_path / "l.json"), "--json")
    assert code == 0, err
    versions = [r["version"] for r in json.loads(out)["releases"] if r["target"] == "release"]
    assert versions == ["2", "3", "5"]


@pytest.mark.parametrize("what", ["garbage", "unreachable", "notaurl", "ledger"])
def test_releases_bad_input_is_one_line(project: CommitBuilder, series_root: Path,
                                        tmp_path: Path, index: str, what: str) -> None:
    ledger = tmp_path / "ledger.json"
    url = {"garbage": f"{index}/garbage", "unreachable": "http://127.0.0.1:9/simple",
           "notaurl": "ftp://user:s3cret@127.0.0.1/simple"}.get(what, f"{index}/simple")
    if what == "ledger":
        ledger.write_text("{not json")
    before = ledger.read_bytes() if ledger.exists() else None
    code, out, err = _carry(series_root, "releases", "good", "--repo", str(project.path),
                            "--index-url", url, "--ledger", str(ledger))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "s3cret" not in err
    assert (ledger.read_bytes() if ledger.exists() else None) == before


def test_ci_matrix_and_cells_fill_the_ledger(project: CommitBuilder, series_root: Path,
                                             tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    _ledger(ledger, project, "v1")
    code, out, err = _carry(series_root, "ci", "matrix", "--repo", str(project.path),
                            "--ledger", str(ledger))
    assert code == 0, err
    cells = json.loads(out)["include"]
    assert cells == [{"series": "good", "target": "release", "ref": "v2"},
                     {"series": "good", "target": "release", "ref": "v3"},
                     {"series": "good", "target": "main", "ref": "main"}]
    refs = git(project.path, "for-each-ref", "refs/heads", "refs/tags")
    code, out, err = _carry(series_root, "ci", "run", "good", "release", "--ref", "v2",
                            "--repo", str(project.path), "--engine", "local",
                            "--ledger", str(ledger), "--out", str(tmp_path / "out"), "--json")
    assert code == 0, err
    assert json.loads(out)["rows"][0]["validate"] == "passed"
    assert (tmp_path / "out" / "summary.json").is_file()
    assert git(project.path, "for-each-ref", "refs/heads", "refs/tags") == refs
    records = json.loads(ledger.read_text())["records"]
    assert [(r["target"], r["ref"], r["outcome"]) for r in records] == [
        ("release", "v1", "passed"), ("release", "v2", "passed")]
    assert records[1]["upstream"] == project.rev("v2") and len(records[1]["tree"]) == 40
    code, out, err = _carry(series_root, "ci", "matrix", "--repo", str(project.path),
                            "--ledger", str(ledger))
    assert [c["ref"] for c in json.loads(out)["include"]] == ["v3", "main"]
    code, out, err = _carry(series_root, "ci", "run", "good", "release", "--ref", "v2",
                            "--repo", str(project.path), "--engine", "local",
                            "--ledger", str(ledger), "--json")
    assert code == 0 and json.loads(out)["rows"][0]["rebase"] == "skipped"
    assert len(json.loads(ledger.read_text())["records"]) == 2


def test_ci_matrix_reports_a_series_without_targets(project: CommitBuilder,
                                                    series_root: Path, tmp_path: Path) -> None:
    s = seriesmod.find(series_root, "good")
    s.manifest.targets = []
    seriesmod.save_manifest(s)
    code, out, err = _carry(series_root, "ci", "matrix", "--repo", str(project.path),
                            "--ledger", str(tmp_path / "l.json"))
    assert code == 0 and json.loads(out) == {"include": []}
    assert "good: no targets" in err


def test_merge_ledger_folds_cells_and_plan_script_writes_outputs(
        project: CommitBuilder, series_root: Path, tmp_path: Path) -> None:
    main, a, b = tmp_path / "main.json", tmp_path / "a.json", tmp_path / "b.json"
    _ledger(main, project, "v1")
    _ledger(a, project, "v1")
    _ledger(b, project, "v2")
    r = run_carry("ci", "merge-ledger", "--ledger", str(main), str(a), str(b))
    assert r.code == 0 and "1 new record(s)" in r.out, r.err
    assert [x["ref"] for x in json.loads(main.read_text())["records"]] == ["v1", "v2"]
    b.write_text("[]")
    r = run_carry("ci", "merge-ledger", "--ledger", str(main), str(b))
    assert r.code == 2 and len(r.err.splitlines()) == 1
    assert [x["ref"] for x in json.loads(main.read_text())["records"]] == ["v1", "v2"]
    out = tmp_path / "github_output"
    env = dict(os.environ, CARRY_SERIES_DIR=str(series_root), CARRY_LEDGER=str(main),
               GITHUB_OUTPUT=str(out), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    proc = subprocess.run(["bash", str(CI / "plan.sh"), str(project.path), ""], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert lines["any"] == "true"
    assert [c["ref"] for c in json.loads(lines["matrix"])["include"]] == ["v3", "main"]


def test_the_index_is_what_pip_would_use(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked of pip's public command line: its configuration file, then its own default."""
    from carry.job.releases import index_url

    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = http://127.0.0.1:9/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert index_url(None) == "http://127.0.0.1:9/simple"
    conf.write_text("[global]\nindex-url = http://127.0.0.1:9/simple\n"
                    "[install]\nindex-url = http://127.0.0.1:8/simple\n")
    assert index_url(None) == "http://127.0.0.1:8/simple"
    assert index_url("http://127.0.0.1:7/simple") == "http://127.0.0.1:7/simple"
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # nothing configured: pip's default
    default = index_url(None)
    assert default is not None and default.startswith("https://")
    assert default.rstrip("/").endswith("/simple")
