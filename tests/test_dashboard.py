"""The CI job a team watches and steers. `carry ci --dashboard` keeps one issue with every series
on every target; its boxes retry a cell or pause a series, and count only when someone with
write access ticked them; failing tests get a tracking issue that says whether each test fails
on upstream too; at most N PRs and issues are opened per run. All against the GitHub double on
127.0.0.1 (PyGithub's real HTTP), with real git repositories and the local engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from carry.job import board as boardmod
from carry.job import failing, tracking
from carry.series import store as seriesmod
from carry.series.store import Repository, Target
from tests import github_server
from tests.conftest import CommitBuilder, git, run_carry
from tests.validate import synthetic

CI = Path(__file__).resolve().parents[1] / "ci"
TOKEN = "ghp_dashboard_secret_0123456789"
ALICE, MALLORY = "ghp_alice_writer_token_1", "ghp_mallory_triage_token_2"
FORK = "lab/fork"
CORE = synthetic.SPDX_LINE + synthetic.CORE.format(fix=synthetic.BUG)  # upstream's, unfixed
REWORK = CORE.replace("[-1:]", "[-1:]  # newest only")  # conflicts with the series' fix


@dataclass
class Site:
    up: CommitBuilder
    root: Path
    tmp: Path
    gh: github_server.RunningServer

    env_extra: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": self.gh.url,
                "CARRY_SERIES_DIR": str(self.root),
                "GITHUB_STEP_SUMMARY": str(self.tmp / "step-summary.md"), **self.env_extra}

    def ci(self, *extra: str, codes: tuple[int, ...] = (0, 1)) -> dict:
        """One scheduled run of the whole job, with the dashboard."""
        r = run_carry("ci", "--repo", str(self.up.path), "--engine", "local", "--out",
                      str(self.tmp / "out"), "--dashboard", *extra, "--json", env=self.env)
        assert r.code in codes, r.out + r.err
        assert TOKEN not in r.out + r.err
        out: dict = json.loads(r.out)
        return out

    def issues(self) -> dict[int, github_server.Issue]:
        return self.gh.state.repos[FORK].issues

    def dashboard(self) -> github_server.Issue:
        (found,) = [i for i in self.issues().values() if boardmod.is_dashboard(i.body)]
        return found

    def board(self) -> boardmod.Board:
        return boardmod.parse(FORK, self.dashboard().body)

    def tick(self, token: str, kind: str, on: bool = True) -> None:
        """Someone (un)ticks the first `kind` box in GitHub's web editor, which saves the
        body with CRLF line ends."""
        issue = self.dashboard()
        lines = issue.body.replace("\r\n", "\n").split("\n")
        i = next(n for n, ln in enumerate(lines) if f"<!-- carry:box {kind} " in ln)
        lines[i] = lines[i].replace("- [ ]", "- [x]") if on else \
            lines[i].replace("- [x]", "- [ ]")
        _patch(self.gh, token, issue.number, "\r\n".join(lines))

    def writes(self) -> int:
        return len(self.gh.state.writes())


def _patch(gh: github_server.RunningServer, token: str, number: int, body: str) -> None:
    req = urllib.request.Request(
        f"{gh.url}/repos/{FORK}/issues/{number}", method="PATCH",
        data=json.dumps({"body": body}).encode(),
        headers={"Authorization": f"token {token}", "X-GitHub-Api-Version": "2026-03-10"})
    with urllib.request.urlopen(req) as resp:  # noqa: S310 - the double on 127.0.0.1
        assert resp.status == 200


def _release(up: CommitBuilder, tag: str, message: str, files: dict[str, str | None]) -> None:
    up.checkout("main")
    up.commit(message, files)
    up.tag(tag)


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
    gh.state.git[FORK] = tmp_path / "origin.git"
    gh.state.add_token(ALICE, "alice")
    gh.state.add_token(MALLORY, "mallory")
    gh.state.roles[(FORK, "alice")] = "write"
    gh.state.roles[(FORK, "mallory")] = "triage"  # may edit issues, may not push
    yield Site(up, series_root, tmp_path, gh)
    gh.stop()


def test_one_dashboard_after_several_runs_and_a_quiet_rerun_writes_nothing(site: Site) -> None:
    first = site.ci("--open-pr", "--track-issues")
    assert first["rows"][0]["validate"] == "passed"
    assert first["dashboard"][0]["action"] == "opened"
    pr = next(a for a in first["loop"] if a["kind"] == "pr")["number"]

    _release(site.up, "v3", "core: keep only the newest state", {"calc/core.py": REWORK})
    second = site.ci("--open-pr", "--track-issues")
    (conflict,) = [a for a in second["loop"] if a["kind"] == "issue"]
    assert (conflict["action"], second["dashboard"][0]["action"]) == ("opened", "updated")

    mark = site.writes()
    third = site.ci("--open-pr", "--track-issues")
    assert third["dashboard"][0]["action"] == "unchanged"
    assert site.writes() == mark  # nothing new: not one request that writes
    # The workflow's loop job on a run without cells: it reads the dashboard, writes nothing.
    env = {**os.environ, **site.env, "GH_TOKEN": TOKEN,
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(["bash", str(CI / "loop.sh"), str(site.up.path),
                           str(site.tmp / "no-cells"), "--json"], cwd=site.tmp, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["dashboard"][0]["action"] == "unchanged"
    assert site.writes() == mark

    issue = site.dashboard()  # still the one dashboard, and carry's
    assert issue.user == "carry-bot" and issue.title == boardmod.TITLE
    (cell,) = site.board().cells
    assert (cell.series, cell.target, cell.ref, cell.state) == ("good", "release", "v3",
                                                                "conflict")
    assert cell.upstream == site.up.rev("v3") and cell.issue == conflict["number"]
    assert cell.details and cell.details[0].startswith("root `0001-")
    assert f"since upstream `{site.up.rev('v3')[:12]}` \"core: keep only the newest state\"" \
        in cell.details[0]  # the replay's why: the upstream commit that caused it
    assert site.board().prs == {"good": pr}
    body = issue.body
    row = next(ln for ln in body.splitlines() if ln.startswith("| `good` | `release` |"))
    assert f"`v3` (`{site.up.rev('v3')[:12]}`), {cell.time[:10]}" in row
    assert f"| #{pr} | #{conflict['number']} |" in row and "conflict<br>root `0001-" in row
    assert "<!-- carry:box retry series=good target=release -->" in body
    assert "- [ ] `good` <!-- carry:box pause series=good -->" in body
    assert "Last run with news: " in body and TOKEN not in body
    summary = (site.tmp / "step-summary.md").read_text()
    assert summary.count("### Dashboard") == 4 and row in summary  # the same table, each run
    assert tracking.matches(site.issues()[conflict["number"]].body, "good", "release")


def test_a_ticked_retry_reruns_its_cell_and_is_unticked(site: Site) -> None:
    assert site.ci()["rows"][0]["validate"] == "passed"
    assert site.ci()["rows"][0]["validate"] == "cached passed"  # what an unticked run does
    # The matrix: the ledger holds the cell, so it is planned only once the box is ticked.
    ledger = str(site.tmp / "ledger.json")
    cell = run_carry("ci", "run", "good", "release", "--ref", "v2", "--repo",
                     str(site.up.path), "--engine", "local", "--ledger", ledger, "--out",
                     str(site.tmp / "cell"), env=site.env)
    assert cell.code == 0, cell.err

    def matrix() -> list[dict[str, str]]:
        r = run_carry("ci", "matrix", "--repo", str(site.up.path), "--ledger", ledger,
                      "--dashboard", env=site.env)
        assert r.code == 0, r.err
        cells: list[dict[str, str]] = json.loads(r.out)["include"]
        return cells

    assert matrix() == []
    site.tick(ALICE, "retry")
    mark = site.writes()
    assert matrix() == [{"series": "good", "target": "release", "ref": "v2",
                         "flag": "--retry"}]
    assert site.writes() == mark  # the plan reads the dashboard, never writes it

    again = site.ci()
    assert again["rows"][0]["validate"] == "passed"  # run again, past the validation cache
    assert again["dashboard"][0]["action"] == "updated"
    assert site.board().retry == set()  # unticked once done
    assert "- [ ] `good` on `release` <!-- carry:box retry" in site.dashboard().body
    assert matrix() == []
    assert site.ci()["rows"][0]["validate"] == "cached passed"


def test_a_pause_box_pauses_the_series_until_unticked(site: Site) -> None:
    site.ci("--open-pr", "--track-issues")
    site.tick(ALICE, "pause")
    _release(site.up, "v3", "core: keep only the newest state", {"calc/core.py": REWORK})
    mark = len(site.gh.state.requests)
    paused = site.ci("--open-pr", "--track-issues")
    assert paused["rows"] == [] and paused["loop"] == []  # skipped: no rebase, no PR, no issue
    sent = site.gh.state.requests[mark:]
    assert [r for r in sent if r[0] != "GET" and r[1] != "/api/graphql"] == [
        ("PATCH", f"/repos/{FORK}/issues/{site.dashboard().number}")]  # the dashboard only
    assert [i.number for i in site.issues().values()] == [site.dashboard().number]
    body = site.dashboard().body
    assert "| `good` | `release` |" in body and "**paused**<br>validated" in body
    assert site.board().paused == {"good"}
    assert site.ci("--open-pr", "--track-issues")["dashboard"][0]["action"] == "unchanged"

    # A cell that ran anyway (planned before the tick) is left alone by the loop job too.
    cell = run_carry("ci", "run", "good", "release", "--ref", "v3", "--repo",
                     str(site.up.path), "--engine", "local", "--ledger",
                     str(site.tmp / "ledger.json"), "--out", str(site.tmp / "cell"),
                     env=site.env)
    assert cell.code == 1, cell.err
    mark = site.writes()
    loop = run_carry("ci", "loop", str(site.tmp / "cell" / "summary.json"), "--repo",
                     str(site.up.path), "--out", str(site.tmp / "loop"), "--open-pr",
                     "--track-issues", "--dashboard", "--json", env=site.env)
    assert loop.code == 0, loop.err
    assert json.loads(loop.out)["loop"] == [] and site.writes() == mark

    site.tick(ALICE, "pause", on=False)
    resumed = site.ci("--open-pr", "--track-issues")
    assert resumed["rows"][0]["rebase"] == "conflict"
    assert [a["action"] for a in resumed["loop"] if a["kind"] == "issue"] == ["opened"]
    assert site.board().paused == set() and "**paused**" not in site.dashboard().body


def test_a_box_ticked_without_write_access_is_ignored(site: Site) -> None:
    site.ci()
    site.tick(MALLORY, "retry")
    site.tick(MALLORY, "pause")
    issue = site.dashboard()  # a writer's later edit does not make mallory's ticks count
    _patch(site.gh, ALICE, issue.number, issue.body + "\nA note from alice.\n")
    run = site.ci()
    assert run["rows"][0]["validate"] == "cached passed"  # neither retried nor paused
    board = site.board()
    assert board.retry == set() and board.paused == set()
    body = site.dashboard().body
    assert "- [ ] `good` on `release` <!-- carry:box retry" in body  # put back
    assert "- [ ] `good` <!-- carry:box pause series=good -->" in body
    assert "A note from alice" not in body
    assert "`mallory`" in body and "no write access to lab/fork: 1 box(es) put back" in body

    # Nor do boxes a writer adds by hand: one for a series the dashboard never rendered, and
    # one that repeats a rendered box (which of the two would count?).
    synthetic.import_series(site.root, site.up.path, "late", "weak", sys.executable)
    late = seriesmod.find(site.root, "late")
    late.manifest.targets = [Target(name="release", tags="v*", kind="release")]
    late.manifest.fork = Repository(repo=FORK, remote="origin", branch="main")
    seriesmod.save_manifest(late)
    issue = site.dashboard()
    _patch(site.gh, ALICE, issue.number, issue.body +
           "- [x] `late` <!-- carry:box pause series=late -->\n"
           "- [x] `good` again <!-- carry:box pause series=good -->\n")
    rows = {r["series"]: r for r in site.ci()["rows"]}
    assert set(rows) == {"good", "late"} and site.board().paused == set()
    body = site.dashboard().body
    assert "- [ ] `late` <!-- carry:box pause series=late -->" in body and "again" not in body

    site.tick(ALICE, "retry")  # the same tick by a writer counts
    assert site.ci()["rows"][0]["validate"] == "passed"


def test_failing_tests_open_an_issue_with_their_verdict_and_a_green_run_closes_it(
        site: Site) -> None:
    site.ci("--track-issues")
    # v3's new tests: one fails on upstream as well (its own breakage), one only with the
    # series (it pins upstream's old behaviour, which the series fixes).
    _release(site.up, "v3", "tests: pin retained() and clamp()", {
        "tests/unit/test_pins.py": "from calc.core import retained\nfrom calc.util import "
                                   "clamp\n\n\ndef test_retained_is_the_last_boundary():\n"
                                   "    assert retained(64, 16) == [64]\n\n\n"
                                   "def test_clamp_middle():\n    assert clamp(5, 0, 9) == 6\n"})
    red = site.ci("--track-issues")
    (row,) = red["rows"]
    assert (row["rebase"], row["validate"]) == ("applied", "failed")
    verdicts = {f["test"]: f["verdict"] for f in row["failing"]}
    assert verdicts == {
        "tests/unit/test_pins.py::test_retained_is_the_last_boundary":
            "fails only with the series",
        "tests/unit/test_pins.py::test_clamp_middle": "fails on upstream too"}
    (act,) = [a for a in red["loop"] if a["kind"] == "issue"]
    assert act["action"] == "opened"
    issue = site.issues()[act["number"]]
    assert failing.matches(issue.body, "good", "release") == {
        "series": "good", "target": "release", "ref": "v3", "upstream": site.up.rev("v3")}
    assert tracking.matches(issue.body, "good", "release") is None  # not a conflict's issue
    assert issue.title == "carry: tests fail for good on release (v3)"
    assert ("| `tests/unit/test_pins.py::test_retained_is_the_last_boundary` | fails only "
            "with the series |") in issue.body
    assert "| `tests/unit/test_pins.py::test_clamp_middle` | fails on upstream too |" in \
        issue.body
    assert "## The end of the output" in issue.body and "2 failed" in issue.body
    assert "carry-validate-" not in issue.body and TOKEN not in issue.body
    cell = site.board().cells[0]
    assert cell.state == "tests failing" and cell.issue == issue.number
    assert "`tests/unit/test_pins.py::test_clamp_middle`: fails on upstream too" in cell.details

    mark = site.writes()  # the same failure again: the issue is left as it is
    assert [a["action"] for a in site.ci("--track-issues")["loop"]] == ["unchanged"]
    assert site.writes() == mark

    _release(site.up, "v4", "tests: unpin", {"tests/unit/test_pins.py": None})
    green = site.ci("--track-issues")
    assert [(a["kind"], a["action"]) for a in green["loop"]] == [("issue", "closed")]
    assert (issue.state, issue.state_reason) == ("closed", "completed")
    (closing,) = [c for c in site.gh.state.repos[FORK].comments if c.issue == issue.number]
    assert closing.body.startswith("carry: the tests of `good` pass on `v4`")
    cell = site.board().cells[0]
    assert (cell.state, cell.issue, cell.ref) == ("validated", 0, "v4")


def test_at_most_n_opened_per_run_and_the_rest_wait(site: Site) -> None:
    s = seriesmod.find(site.root, "good")
    s.manifest.targets.append(Target(name="edge", ref="edge", kind="dev"))
    seriesmod.save_manifest(s)
    site.up.checkout("main")
    site.up.commit("core: rework on the edge", {"calc/core.py": REWORK})
    site.up.branch("edge")
    git(site.up.path, "reset", "-q", "--hard", "v2")
    first = site.ci("--open-pr", "--track-issues", "--open-limit", "1")
    acts = {(a["target"], a["kind"]): a for a in first["loop"]}
    assert acts[("release", "pr")]["action"] == "opened"
    assert acts[("edge", "issue")]["action"] == "waiting"
    assert len(site.gh.state.repos[FORK].pulls) == 1
    assert [i.number for i in site.issues().values()] == [site.dashboard().number]
    body = site.dashboard().body
    assert "### Waiting for the next run (at most 1 new PRs and issues per run)" in body
    assert "- `good` on `edge` (`edge`): its tracking issue opens on a later run" in body
    second = site.ci("--open-pr", "--track-issues", "--open-limit", "1")
    acts = {(a["target"], a["kind"]): a for a in second["loop"]}
    assert acts[("release", "pr")]["action"] in ("updated", "unchanged")  # takes no room
    assert acts[("edge", "issue")]["action"] == "opened"
    assert "Waiting for the next run" not in site.dashboard().body


def test_the_run_and_each_series_bound_what_is_opened(site: Site) -> None:
    """--open-limit bounds the run; a manifest's [ci] open_limit its own series."""
    from carry.git import Repo
    from carry.job import shared

    s = seriesmod.find(site.root, "good")
    s.manifest.ci.open_limit = 2
    seriesmod.save_manifest(s)
    assert "[ci]\nopen_limit = 2\n" in s.manifest_path.read_text()
    s = seriesmod.find(site.root, "good")
    other = seriesmod.find(site.root, "good")
    other.manifest.name, other.manifest.ci.open_limit = "other", 0
    repo = Repo.open(str(site.up.path))

    def room(limit: int, taken: dict[str, int]) -> tuple[bool, bool]:
        ctx = shared.Context(repo, shared.Options(open_limit=limit), opened=dict(taken))
        return ctx.room(s), ctx.room(other)

    assert room(0, {"good": 1}) == (True, True)
    assert room(0, {"good": 2}) == (False, True)  # the series' own bound
    assert room(3, {"good": 1, "other": 1}) == (True, True)
    assert room(3, {"good": 1, "other": 2}) == (False, False)  # the run's


def test_index_releases_waiting_for_their_tag_or_yanked_are_on_the_board(site: Site) -> None:
    """A series that names its package: the index (PEP 691, on 127.0.0.1) has 5 with no tag
    yet, and 3, the newest tag, yanked."""
    import threading
    from http.server import ThreadingHTTPServer

    from tests.test_releases import _Index

    s = seriesmod.find(site.root, "good")
    s.manifest.upstream.repo, s.manifest.upstream.package = "example/calc", "calc"
    seriesmod.save_manifest(s)
    _release(site.up, "v3", "Release 3", {"NEWS": "3\n"})
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        site.env_extra = {"PIP_INDEX_URL": f"http://127.0.0.1:{server.server_address[1]}/simple",
                          "CARRY_LEDGER": str(site.tmp / "none.json")}
        site.ci()
    finally:
        server.shutdown()
    (cell,) = site.board().cells
    assert (cell.ref, cell.pending) == ("v3", ["3: yanked", "5: waiting for the tag"])
    assert "validated<br>3: yanked<br>5: waiting for the tag" in site.dashboard().body


def test_bad_dashboard_input_is_one_line_and_asks_github_nothing(site: Site) -> None:
    base = ["ci", "--repo", str(site.up.path), "--engine", "local", "--out",
            str(site.tmp / "out")]
    other = seriesmod.find(site.root, "good")
    other.manifest.fork = Repository(repo="lab/other", remote="origin", branch="main")
    synthetic.import_series(site.root, site.up.path, "late", "weak", sys.executable)
    late = seriesmod.find(site.root, "late")
    late.manifest.fork = Repository(repo=FORK, remote="origin", branch="main")
    seriesmod.save_manifest(late)
    seriesmod.save_manifest(other)
    cases = [
        ([*base, "--open-limit", "-1"], "--open-limit"),
        ([*base, "--dashboard"], "the series name several repositories: lab/fork, lab/other"),
        (["ci", "loop", "--repo", str(site.up.path), "--open-pr"], "summary.json files"),
        (["ci", "matrix", "--repo", str(site.up.path), "--dashboard", "--forge-repo", "x"],
         "--forge-repo"),
    ]
    for args, said in cases:
        r = run_carry(*args, env=site.env)
        assert r.code == 2 and said in r.err, (args, r.err)
        assert len(r.err.strip().splitlines()) == 1 and r.err.startswith("carry: error: ")
    path = other.manifest_path
    path.write_text(path.read_text() + "\n[ci]\nopen_limit = -1\n")
    r = run_carry(*base, env=site.env)
    assert r.code == 2 and "key 'ci.open_limit': expected an integer >= 0, got -1" in r.err
    assert site.gh.state.requests == []


def test_the_board_parses_only_what_it_renders() -> None:
    """Boxes by their markers (a tick saved by GitHub's editor with CRLF counts; a marker
    quoted in prose does not), and a record no subject can break out of."""
    board = boardmod.Board(FORK, cells=[boardmod.Cell("good", "release", ref="v3",
                                                      state="conflict", details=[
                                                          'root since "x <!-- y -->" (#1)'])])
    board.paused = {"good"}
    text = boardmod.render(board)
    assert all(ln.startswith("<!-- carry:") or " <!-- carry:box " in ln  # carry's own only
               for ln in text.splitlines() if "<!--" in ln)
    back = boardmod.parse(FORK, text)
    assert back.cells == board.cells and back.paused == {"good"} and back.retry == set()
    ticked = text.replace("- [ ] `good` on", "- [x] `good` on").replace("\n", "\r\n")
    assert boardmod.is_dashboard(ticked) and boardmod.parse(FORK, ticked).retry == {
        ("good", "release")}
    quoted = text + "\nsee `<!-- carry:box retry series=good target=main -->` above\n"
    assert ("retry", "good", "main") not in boardmod.boxes(quoted)
    assert boardmod.parse(FORK, text.replace("carry:dashboard-data {", "carry:dashboard-data "
                                             "{not json")).cells == []


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_a_kill_during_the_dashboard_update_converges_to_one_dashboard(
        site: Site, method: str) -> None:
    """SIGKILL the moment GitHub made (POST) or edited (PATCH) the dashboard: a rerun finds
    it by its marker and leaves one dashboard, holding this run's table."""
    import signal

    if method == "PATCH":
        site.ci()
        _release(site.up, "v3", "core: keep only the newest state", {"calc/core.py": REWORK})
    procs: list[subprocess.Popen[bytes]] = []

    def kill(m: str, p: str) -> None:
        if m == method and p.startswith(f"/repos/{FORK}/issues") and procs:
            procs[0].send_signal(signal.SIGKILL)
            site.gh.state.after_answer = None

    site.gh.state.after_answer = kill
    args = ["ci", "--repo", str(site.up.path), "--engine", "local", "--out",
            str(site.tmp / "out"), "--dashboard", "--json"]
    procs.append(subprocess.Popen([sys.executable, "-m", "carry", *args],
                                  env={**os.environ, **site.env}, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    assert procs[0].wait() == -signal.SIGKILL
    again = site.ci()
    assert again["dashboard"][0]["action"] in ("updated", "unchanged")
    site.dashboard()  # exactly one
    assert site.ci()["dashboard"][0]["action"] == "unchanged"


def test_the_board_names_what_a_clean_replay_breaks_and_what_carry_resolved() -> None:
    """Clean is not correct (F17): an applied cell whose audit found something shows each
    finding, and a patch carry resolved by itself shows for review; a hand-recorded
    resolution needs no second look there."""
    from carry.job import shared, steer
    from carry.job.board import Cell

    audit = "0003 applies cleanly but imports calc.util, a module the target does not have"
    auto = ("0001-a.patch: conflict resolved by itself: both sides added entries to KERNELS "
            "in k.py (resolved by carry: review)")
    hand = "0002-b.patch: conflict resolved by the resolution recorded on v2"
    row = shared.Row("s", "main", "f" * 40, "applied", check=shared.Check.PASSED,
                     audit=[audit], resolved=[auto, hand])
    cell = Cell("s", "main")
    steer._take(cell, row, False, "2026-12-06T00:00:00Z")
    assert cell.state == "passed, audit failed"
    assert cell.details == [f"audit: {audit}", auto]

