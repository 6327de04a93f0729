"""The CI loop end to end: a synthetic upstream publishes releases between scheduled runs; each
run plans the matrix and runs every cell as the workflow does (`carry ci matrix`, then
`carry ci run ... --open-pr --track-issues`), with the local engine, a real bare `origin` to
push to and the GitHub double on 127.0.0.1 through PyGithub's real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from carry.job import tracking
from carry.series import store as seriesmod
from carry.series.store import Repository, Target
from tests import github_server
from tests.conftest import CommitBuilder, git, run_carry
from tests.validate import synthetic

CI = Path(__file__).resolve().parents[1] / "ci"
TOKEN = "ghp_loop_secret_value_0987654321"
FORK = "lab/fork"
LOOP = ("--open-pr", "--track-issues")
CORE = synthetic.SPDX_LINE + synthetic.CORE.format(fix=synthetic.BUG)  # upstream's, unfixed


@dataclass
class Site:
    up: CommitBuilder
    root: Path
    tmp: Path
    gh: github_server.RunningServer

    @property
    def env(self) -> dict[str, str]:
        return {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": self.gh.url,
                "CARRY_SERIES_DIR": str(self.root)}

    def carry(self, *args: str, codes: tuple[int, ...] = (0,)) -> dict:
        r = run_carry(*args, "--json", env=self.env)
        assert r.code in codes, r.out + r.err
        assert TOKEN not in r.out + r.err
        return json.loads(r.out) if r.out.strip() else {}

    def matrix(self) -> list[dict[str, str]]:
        r = run_carry("ci", "matrix", "--repo", str(self.up.path), "--ledger", self.ledger,
                      env=self.env)
        assert r.code == 0, r.err
        cells: list[dict[str, str]] = json.loads(r.out)["include"]
        return cells

    def cell(self, cell: dict[str, str], *extra: str) -> dict:
        return self.carry("ci", "run", cell["series"], cell["target"], "--ref", cell["ref"],
                          "--repo", str(self.up.path), "--engine", "local", "--ledger",
                          self.ledger, "--out", str(self.tmp / "out"), *extra, codes=(0, 1))

    def scheduled_run(self, *extra: str) -> tuple[list[dict[str, str]], list[dict]]:
        """One workflow run: the matrix, then each cell, in the matrix's order."""
        cells = self.matrix()
        return cells, [self.cell(c, *extra) for c in cells]

    @property
    def ledger(self) -> str:
        return str(self.tmp / "ledger.json")

    def origin_refs(self) -> str:
        return git(self.tmp / "origin.git", "for-each-ref")

    def series(self) -> seriesmod.Series:
        return seriesmod.find(self.root, "good")


@pytest.fixture
def site(tmp_path: Path, series_root: Path) -> Iterator[Site]:
    up = synthetic.upstream_project(tmp_path / "calc")
    git(tmp_path, "init", "-q", "--bare", "origin.git")
    git(up.path, "remote", "add", "origin", str(tmp_path / "origin.git"))
    git(up.path, "push", "-q", "origin", "main")
    synthetic.import_series(series_root, up.path, "good", "fix", sys.executable)
    s = seriesmod.find(series_root, "good")
    s.manifest.targets = [Target(name="release", tags="v*", kind="release")]
    s.manifest.fork = Repository(repo=FORK, remote="origin", branch="main")
    seriesmod.save_manifest(s)
    gh = github_server.start(TOKEN)
    gh.state.repo(FORK)
    gh.state.git[FORK] = tmp_path / "origin.git"  # PRs' heads follow their pushed branches
    yield Site(up, series_root, tmp_path, gh)
    gh.stop()


def _release(up: CommitBuilder, tag: str, message: str, files: dict[str, str]) -> str:
    up.checkout("main")
    sha = up.commit(message, files)
    up.tag(tag)
    return sha


def _counts(gh: github_server.RunningServer, since: int) -> Counter[str]:
    return Counter(method for method, _ in gh.state.requests[since:])


def test_the_loop_opens_a_pr_and_an_issue_then_goes_quiet_then_closes_the_issue(
        site: Site) -> None:
    up, gh = site.up, site.gh
    # Run 0, before the loop was turned on: the newest release, recorded in the ledger.
    (first,) = site.matrix()
    assert first["ref"] == "v2"
    assert site.cell(first)["rows"][0]["validate"] == "passed"

    # Two releases between runs: v3 leaves the series' lines alone, v4 rewrites them.
    _release(up, "v3", "util: document the bounds", {
        "calc/util.py": synthetic.SPDX_LINE + "def clamp(x: int, lo: int, hi: int) -> int:\n"
                        "    \"\"\"x, limited to [lo, hi] (inclusive).\"\"\"\n"
                        "    return max(lo, min(x, hi))\n"})
    rework = _release(up, "v4", "core: keep only the newest state", {
        "calc/core.py": CORE.replace("[-1:]", "[-1:]  # newest only")})

    # A dry run first: it says what it would do and writes nothing anywhere.
    version, refs = site.series().manifest.version, site.origin_refs()
    cells, dry = site.scheduled_run(*LOOP, "--dry-run")
    assert [c["ref"] for c in cells] == ["v3", "v4"]
    assert [a["action"] for r in dry for a in r["loop"]] == ["would-open", "would-open"]
    assert gh.state.writes() == [] and site.origin_refs() == refs
    assert site.series().manifest.version == version
    assert [c["ref"] for c in site.matrix()] == ["v3", "v4"]  # the ledger still lacks them

    # Run 1: both releases are validated; v3 refreshes the series and opens its PR, v4's
    # conflict opens the tracking issue.
    mark = len(gh.state.requests)
    cells, results = site.scheduled_run(*LOOP)
    run1 = _counts(gh, mark)
    assert [c["ref"] for c in cells] == ["v3", "v4"]
    v3, v4 = results
    assert v3["status"] == "passed" and v3["rows"][0]["validate"].endswith("passed")
    assert (v4["status"], v4["rows"][0]["rebase"]) == ("failed", "conflict")
    summary = (site.tmp / "out" / "summary.md").read_text()
    assert "| good | release | conflict in 0001-" in summary
    assert "issue opened #" in summary
    artifact = json.loads((site.tmp / "out" / "summary.json").read_text())
    assert artifact["rows"][0]["ref"] == "v4" and artifact["loop"][0]["kind"] == "issue"
    report = json.loads(Path(v3["rows"][0]["report"]).read_text())
    assert report["status"] == "passed"

    (pr_act,) = v3["loop"]
    assert (pr_act["kind"], pr_act["action"]) == ("pr", "opened")
    pulls = gh.state.repos[FORK].pulls
    assert list(pulls) == [pr_act["number"]]
    pull = pulls[pr_act["number"]]
    assert (pull.head, pull.base, pull.draft, pull.state) == (
        "carry/good/tip", "main", True, "open")
    assert pull.body.startswith("<!-- carry:series=good -->")
    assert "9 tests passed and 1 skipped" in pull.body  # the cell's own validation report
    s = site.series()
    assert s.manifest.version == version + 1 and s.manifest.base.commit == up.rev("v3")
    pushed = git(up.path, "ls-remote", "origin", "refs/heads/carry/good/tip").split()[0]
    assert git(up.path, "merge-base", "--is-ancestor", "v3", pushed) == ""

    (issue_act,) = v4["loop"]
    assert (issue_act["kind"], issue_act["action"]) == ("issue", "opened")
    issues = gh.state.repos[FORK].issues
    assert list(issues) == [issue_act["number"]]
    issue = issues[issue_act["number"]]
    fields = tracking.parse(issue.body)
    assert fields == {"series": "good", "target": "release", "ref": "v4",
                      "upstream": up.rev("v4")}
    assert "0001-" in issue.body and "Toby Mao" in issue.body
    assert "`calc/core.py`" in issue.body
    assert f"`{rework[:12]}` core: keep only the newest state" in issue.body
    assert "util: document the bounds" not in issue.body  # it touched other paths
    assert run1["POST"] == 2 and run1["PATCH"] == 0  # one PR, one issue, nothing else

    # Run 2, nothing new: no cell, and a cell run again anyway is skipped by the ledger.
    mark, refs = len(gh.state.requests), site.origin_refs()
    assert site.matrix() == []
    again = [site.cell(c, *LOOP) for c in cells]
    assert [r["rows"][0]["rebase"] for r in again] == ["skipped", "skipped"]
    assert all(r["loop"] == [] for r in again)
    assert gh.state.requests[mark:] == []  # no request at all, so none that writes
    assert site.origin_refs() == refs and site.series().manifest.version == version + 1

    # Run 3: upstream gives up the rework in v5, where the series applies again.
    _release(up, "v5", "core: back to the last boundary", {"calc/core.py": CORE})
    cells, dry = site.scheduled_run(*LOOP, "--dry-run")
    assert sorted(a["action"] for a in dry[0]["loop"]) == ["would-close", "would-update"]
    mark = len(gh.state.requests)
    cells, (v5,) = site.scheduled_run(*LOOP)
    run3 = _counts(gh, mark)
    assert [c["ref"] for c in cells] == ["v5"] and v5["status"] == "passed"
    acts = {a["kind"]: a for a in v5["loop"]}
    assert acts["pr"]["action"] == "updated" and acts["pr"]["number"] == pr_act["number"]
    assert acts["issue"]["action"] == "closed" and acts["issue"]["number"] == issue.number
    assert len(pulls) == 1 and list(issues) == [issue.number]
    assert issue.state == "closed" and issue.state_reason == "completed"
    (closing,) = [c for c in gh.state.repos[FORK].comments if c.issue == issue.number]
    assert closing.body.startswith("carry: `good` applies cleanly to `v5`")
    assert site.series().manifest.base.commit == up.rev("v5")
    assert git(up.path, "ls-remote", "origin", "refs/heads/carry/good/tip").split()[0] != pushed
    assert (run3["POST"], run3["PATCH"]) == (1, 2)  # comment; PR edit, issue close

    # The v5 cell forced to run again: the same commits and the same PR body, so the branch
    # is not rewritten, nothing is pushed and GitHub is asked to change nothing.
    writes, refs = len(gh.state.writes()), site.origin_refs()
    (forced,) = [site.cell(c, *LOOP, "--force") for c in cells]
    assert [(a["kind"], a["action"]) for a in forced["loop"]] == [("pr", "unchanged")]
    assert len(gh.state.writes()) == writes and site.origin_refs() == refs
    # ... and so on a fresh runner, whose clone has the published branch only as origin's
    published = git(up.path, "ls-remote", "origin", "refs/heads/carry/good/tip").split()[0]
    git(up.path, "branch", "-D", "carry/good/tip")
    assert git(up.path, "rev-parse", "refs/remotes/origin/carry/good/tip") == published
    (fresh,) = [site.cell(c, *LOOP, "--force") for c in cells]
    assert [(a["kind"], a["action"]) for a in fresh["loop"]] == [("pr", "unchanged")]
    assert len(gh.state.writes()) == writes and site.origin_refs() == refs
    assert git(up.path, "rev-parse", "carry/good/tip") == published
    for n, counts in (("run 1", run1), ("run 3", run3)):
        print(f"{n}: {dict(sorted(counts.items()))}")


def test_a_clean_older_release_leaves_a_newer_conflict_open(site: Site) -> None:
    """Cells finish in any order: v3 clean after v4's conflict must not close v4's issue."""
    up = site.up
    _release(up, "v3", "core: keep only the newest state", {
        "calc/core.py": CORE.replace("[-1:]", "[-1:]  # newest only")})
    conflict = site.cell({"series": "good", "target": "release", "ref": "v3"}, *LOOP)
    assert conflict["loop"][0]["action"] == "opened"
    older = site.cell({"series": "good", "target": "release", "ref": "v2"}, "--track-issues")
    (act,) = older["loop"]
    assert act["action"] == "skipped" and "left open" in act["note"]
    assert [i.state for i in site.gh.state.repos[FORK].issues.values()] == ["open"]


def test_loop_bad_input_is_one_line_before_any_validation(site: Site) -> None:
    args = ["ci", "run", "good", "release", "--ref", "v2", "--repo", str(site.up.path),
            "--engine", "local", "--ledger", site.ledger, "--out", str(site.tmp / "out")]
    r = run_carry(*args, "--open-pr", env={**site.env, "GITHUB_TOKEN": ""})
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "no GitHub token" in r.err
    r = run_carry(*args, "--track-issues", "--forge-repo", "nope", env=site.env)
    assert r.code == 2 and "--forge-repo" in r.err and len(r.err.strip().splitlines()) == 1
    assert not (site.tmp / "out").exists() and not Path(site.ledger).exists()
    assert site.gh.state.requests == []


def test_the_marker_is_parsed_not_searched() -> None:
    mark = tracking.marker("good", "release", "v4", "a" * 40)
    assert tracking.parse(f"{mark}\n\ntext") == {"series": "good", "target": "release",
                                                 "ref": "v4", "upstream": "a" * 40}
    assert tracking.matches(f"{mark}\n", "good", "release") is not None
    assert tracking.matches(f"{mark}\n", "goo", "release") is None
    assert tracking.matches(f"{mark}\n", "good", "release@v4") is None
    assert tracking.parse(f"quoted in prose: {mark} here") is None
    # a body GitHub's web editor saved, with CRLF line ends, is still the issue's
    assert tracking.matches(f"{mark}\r\n\r\nedited by hand\r\n", "good", "release")
    spaced = tracking.marker("good", "dev branch", "dev/x y", "b" * 40)
    assert tracking.matches(spaced + "\n", "good", "dev branch") == {
        "series": "good", "target": "dev branch", "ref": "dev/x y", "upstream": "b" * 40}


def test_ci_loop_acts_on_the_cells_summaries_as_the_workflow_record_job_does(
        site: Site) -> None:
    """Cells validate with a read-only token and upload carry-out/; the one job allowed to
    write runs `carry ci loop` over their summaries."""
    up, gh = site.up, site.gh
    _release(up, "v3", "core: keep only the newest state", {
        "calc/core.py": CORE.replace("[-1:]", "[-1:]  # newest only")})
    summaries = []
    for i, ref in enumerate(("v2", "v3")):
        out = site.tmp / "cells" / f"cell-{i}" / "carry-out"
        r = run_carry("ci", "run", "good", "release", "--ref", ref, "--repo", str(up.path),
                      "--engine", "local", "--ledger", site.ledger, "--out", str(out),
                      env=site.env)
        assert r.code in (0, 1), r.err
        summaries.append(str(out / "summary.json"))
    assert gh.state.requests == []  # the cells never talk to GitHub
    env = {**os.environ, **site.env, "GH_TOKEN": TOKEN,
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(["bash", str(CI / "loop.sh"), str(up.path), str(site.tmp / "cells"),
                           "--json"], cwd=site.tmp, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and TOKEN not in proc.stdout + proc.stderr, proc.stderr
    loop = json.loads(proc.stdout)
    assert sorted((a["ref"], a["kind"], a["action"]) for a in loop["loop"]) == [
        ("v2", "pr", "opened"), ("v3", "issue", "opened")]
    (pull,) = gh.state.repos[FORK].pulls.values()
    assert "9 tests passed and 1 skipped" in pull.body  # the report beside the summary
    assert "issue opened" in (site.tmp / "carry-loop" / "summary.md").read_text()
    r = run_carry("ci", "loop", *summaries, "--repo", str(up.path), env=site.env)
    assert r.code == 2 and "nothing to do" in r.err and len(r.err.strip().splitlines()) == 1
    (site.tmp / "bad.json").write_text("{}")
    r = run_carry("ci", "loop", str(site.tmp / "bad.json"), "--repo", str(up.path), *LOOP,
                  env=site.env)
    assert r.code == 2 and "not a carry ci summary.json" in r.err


def test_the_whole_job_closes_the_loop_too(site: Site) -> None:
    """`carry ci` (every target in one process) names tag cells `release@v3`; the loop files
    them under the manifest target `release`."""
    _release(site.up, "v3", "core: keep only the newest state", {
        "calc/core.py": CORE.replace("[-1:]", "[-1:]  # newest only")})
    job = site.carry("ci", "--repo", str(site.up.path), "--engine", "local", "--out",
                     str(site.tmp / "out"), *LOOP, codes=(1,))
    assert [r["target"] for r in job["rows"]] == ["release@v3"]
    (act,) = job["loop"]
    assert (act["kind"], act["action"], act["target"], act["ref"]) == (
        "issue", "opened", "release", "v3")
    (issue,) = site.gh.state.repos[FORK].issues.values()
    assert tracking.matches(issue.body, "good", "release") is not None


ME = ("-c", "user.name=A U Thor", "-c", "user.email=author@example.com")


def test_keep_series_pushes_the_refreshed_versions_back(tmp_path: Path) -> None:
    """ci/keep-series.sh: the loop's new series version (files and tag) reaches the branch the
    workflow runs on, after one rebase when that branch moved meanwhile; a dry run and an
    unchanged series/ push nothing."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    work, other = tmp_path / "work", tmp_path / "other"
    git(tmp_path, "clone", "-q", str(origin), str(work))
    (work / "series" / "demo").mkdir(parents=True)
    (work / "series" / "demo" / "series.toml").write_text("version = 1\n")
    git(work, "add", "-A")
    git(work, *ME, "commit", "-q", "-m", "v1")
    git(work, "push", "-q", "origin", "HEAD:main")
    git(tmp_path, "clone", "-q", str(origin), str(other))
    (other / "README").write_text("moved on\n")
    git(other, "add", "-A")
    git(other, *ME, "commit", "-q", "-m", "someone else")
    git(other, "push", "-q", "origin", "HEAD:main")  # main moves under the loop
    script = str(CI / "keep-series.sh")
    env = {**os.environ, "GITHUB_REF_NAME": "main"}

    def keep(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", script, *args], cwd=work, env=env, capture_output=True,
                              text=True)

    assert keep().stdout.strip() == "keep-series: series/ unchanged"
    (work / "series" / "demo" / "series.toml").write_text("version = 2\n")
    (work / "series" / "demo" / "0002-new.patch").write_text("From x\n")
    (work / "series" / ".demo.lock").write_text("")  # the refresh's flock file: not content
    git(work, "tag", "series/demo/v2", "HEAD^{tree}")
    before = git(origin, "rev-parse", "main")
    dry = keep("--dry-run")
    assert dry.returncode == 0 and "series/demo/series.toml" in dry.stdout
    assert git(origin, "rev-parse", "main") == before
    done = keep()
    assert done.returncode == 0 and "pushed" in done.stdout, done.stderr
    assert git(origin, "show", "main:series/demo/series.toml") == "version = 2"
    assert git(origin, "log", "-1", "--format=%s", "main") == \
        "series: refreshed by the carry CI loop"
    assert git(origin, "show", "main:README") == "moved on"  # the other change is kept
    assert git(origin, "tag", "--list", "series/*") == "series/demo/v2"
    assert git(origin, "ls-tree", "-r", "--name-only", "main", "series/").split() == [
        "series/demo/0002-new.patch", "series/demo/series.toml"]


def test_a_row_says_its_validation_in_words_and_reads_back_either_way() -> None:
    """summary.json keeps `validate` in words (what an older `carry ci loop` reads) beside the
    typed fields; a row written before them reads back the same, and a word carry never
    writes is refused."""
    from carry.base import untrusted
    from carry.base.data import to_data
    from carry.job.shared import Check, Row

    row = Row("s", "release@v2", "a" * 40, "applied", check=Check.PASSED, cached=True,
              audit=["0001 breaks tests/x.py"])
    data = to_data(row)
    assert data["validate"] == "cached passed, audit failed" and data["check"] == "passed"
    assert not row.passed and row.validation == "passed, audit failed"
    for said, audit, passed in (("cached passed, audit failed", ["x"], False),
                                ("passed", [], True), ("cached failed", [], False),
                                ("error", [], False), ("ledger: conflict", [], False)):
        old = {k: v for k, v in {**data, "validate": said, "audit": audit}.items()
               if k not in ("check", "cached", "held")}
        back = Row.from_data(old, "rows[0]")
        assert (back.validate, back.passed) == (said, passed)
    clean = Row.from_data({**data, "audit": []}, "rows[0]")
    assert clean.passed and clean.cached and clean.validate == "cached passed"
    for bad in ("passed!", "cached", 5):
        old = {k: v for k, v in {**data, "validate": bad}.items() if k != "check"}
        with pytest.raises(untrusted.BadData):
            Row.from_data(old, "rows[0]")
