"""A forge where others act too: PRs, issues and comments that carry carry's markers without
being carry's, PRs that differ from carry's only in whitespace or in a merge, and a run killed
right after GitHub closed a PR. Through the CLI and PyGithub's real HTTP to the GitHub double,
with a real bare repository holding each PR's head."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from carry.job import tracking
from carry.series import store as seriesmod
from tests import github_server
from tests.conftest import FORK, CommitBuilder, forge_env, git, import_and_apply, run_carry
from tests.test_ci_loop import CORE, LOOP, Site, _release, site  # noqa: F401 - the fixture

Server = github_server.RunningServer
MARK = "<!-- carry:series=demo -->"
GUARD = 'def run(cond, log):\n    if cond:\n        log.append("run")\n        log.append("done")\n'
DEDENTED = GUARD.replace('        log.append("done")', '    log.append("done")')


def _pr_args(fork: CommitBuilder, *extra: str) -> list[str]:
    return ["pr", "demo", "--repo", str(fork.path), "--branch", "carry/demo", "--forge-repo",
            FORK, "--base", "main", "--json", *extra]


def _notes(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("carry: note: ignoring")]


def _push(fork: CommitBuilder, rev: str, ref: str) -> str:
    sha = git(fork.path, "rev-parse", rev)
    git(fork.path, "push", "-q", "-f", "origin", f"{sha}:{ref}")
    return sha


# -- 1. whose PR it is -----------------------------------------------------------------------


@pytest.mark.parametrize(("user", "head_repo", "head"), [
    ("mallory", "mallory/fork", "evil"),  # another account, from its own fork
    ("alice", "", "alice/work"),  # a collaborator, from a branch of the fork itself
    ("carry-bot", "carry-bot/fork", "side"),  # carry's own account, from another repository
    ("ghost", None, "gone"),  # the fork it came from was deleted
])
def test_a_pr_that_is_not_carrys_is_never_pushed_to_or_rewritten(
        user: str, head_repo: str | None, head: str, gh: Server, fork: CommitBuilder,
        series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    before = _push(fork, "main", f"refs/heads/{head}")  # its branch, were it in the fork
    gh.state.add_pull(FORK, 4, title="theirs", body=MARK + "\nnot carry's", head=head,
                      head_sha=before, base="main", user=user, draft=False,
                      head_repo=head_repo)
    dry = run_carry(*_pr_args(fork, "--dry-run"), env=env)
    assert dry.code == 0, dry.err
    assert json.loads(dry.out)["action"] == "would-open"
    r = run_carry(*_pr_args(fork), env=env)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert (out["action"], out["number"], out["head"]) == ("opened", 5, "carry/demo")
    theirs, mine = gh.state.repos[FORK].pulls[4], gh.state.repos[FORK].pulls[5]
    assert (theirs.title, theirs.body) == ("theirs", MARK + "\nnot carry's")
    assert git(fork.path, "ls-remote", "origin", f"refs/heads/{head}").split()[0] == before
    assert (mine.user, mine.head, mine.head_repo) == ("carry-bot", "carry/demo", "")
    (note,) = _notes(r.err)
    assert note.startswith(f"carry: note: ignoring PR {FORK}#4: it carries carry's marker for "
                           "demo but is not carry's (opened by ")
    assert note.endswith(f"carry's PRs are those carry-bot opens from {FORK})")
    assert _notes(dry.err) == [note]


def test_a_foreign_pr_on_carrys_branch_is_refused_before_the_push(
        gh: Server, fork: CommitBuilder, series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    before = _push(fork, "main", "refs/heads/carry/demo")
    gh.state.add_pull(FORK, 4, title="theirs", body=MARK, head="carry/demo", head_sha=before,
                      base="main", user="mallory", draft=False)
    for extra in ((), ("--dry-run",)):
        r = run_carry(*_pr_args(fork, *extra), env=env)
        assert r.code == 2 and len(r.err.splitlines()) == 1, r.err
        assert r.err.startswith("carry: error: branch carry/demo of lab/fork is the head of "
                                "open PR #4 by mallory, which is not carry's PR for demo")
    assert git(fork.path, "ls-remote", "origin", "refs/heads/carry/demo").split()[0] == before
    assert gh.state.writes() == []


def test_an_installation_token_finds_its_own_pr_through_graphql(
        gh: Server, fork: CommitBuilder, series_root: Path) -> None:
    """GitHub Actions' GITHUB_TOKEN may not read /user: the bot's login comes from GraphQL's
    viewer, so the loop's job still updates the PR it opened, and nobody else's."""
    gh.state.add_token("ghs_installation_token", "github-actions[bot]", app=True)
    env = {**forge_env(gh, series_root), "GITHUB_TOKEN": "ghs_installation_token"}
    import_and_apply(fork, env)
    gh.state.add_pull(FORK, 3, title="a person's", body=MARK, head="mine", head_sha="3" * 40,
                      base="main", user="github-actions", draft=False)
    first = run_carry(*_pr_args(fork), env=env)
    assert first.code == 0, first.err
    assert json.loads(first.out)["number"] == 4
    extra = git(fork.path, "commit-tree", "carry/demo^{tree}", "-p", "carry/demo", "-m", "more")
    git(fork.path, "branch", "-f", "carry/demo", extra)
    again = run_carry(*_pr_args(fork, "--title", "again"), env=env)
    assert again.code == 0, again.err
    assert (json.loads(again.out)["action"], json.loads(again.out)["number"]) == ("updated", 4)
    assert gh.state.repos[FORK].pulls[4].user == "github-actions[bot]"
    assert gh.state.repos[FORK].pulls[3].title == "a person's"
    assert ("GET", "/user") in gh.state.requests and ("POST", "/api/graphql") in gh.state.requests


def test_the_loop_never_edits_or_closes_an_issue_someone_else_opened(site: Site) -> None:  # noqa: F811
    up, gh = site.up, site.gh
    (first,) = site.matrix()
    assert site.cell(first)["rows"][0]["validate"] == "passed"
    rework = _release(up, "v4", "core: keep only the newest state", {
        "calc/core.py": CORE.replace("[-1:]", "[-1:]  # newest only")})
    marker = tracking.marker("good", "release", "v4", rework)
    theirs = gh.state.add_issue(FORK, title="mallory's", body=marker + "\nsteer me", user="mallory")
    r = run_carry("ci", "run", "good", "release", "--ref", "v4", "--repo", str(up.path),
                  "--engine", "local", "--ledger", site.ledger, "--out", str(site.tmp / "out"),
                  *LOOP, "--json", env=site.env)
    assert r.code in (0, 1), r.err
    (act,) = json.loads(r.out)["loop"]
    assert (act["action"], act["number"]) == ("opened", theirs.number + 1)
    assert (theirs.title, theirs.body, theirs.state) == ("mallory's", marker + "\nsteer me",
                                                         "open")
    (note,) = _notes(r.err)
    assert note == (f"carry: note: ignoring issue {FORK}#{theirs.number}: it carries carry's "
                    "tracking marker for good on release but is not carry's (opened by "
                    "mallory; carry's issues are those carry-bot opens)")
    # the conflict is over: carry closes its own issue, and leaves mallory's alone
    _release(up, "v5", "core: back to the last boundary", {"calc/core.py": CORE})
    cells, (v5,) = site.scheduled_run(*LOOP)
    closed = [a for a in v5["loop"] if a["kind"] == "issue"]
    assert [(a["action"], a["number"]) for a in closed] == [("closed", act["number"])]
    assert theirs.state == "open" and theirs.body == marker + "\nsteer me"
    assert [c for c in gh.state.repos[FORK].comments if c.issue == theirs.number] == []


# -- supersede: whose PR, whose comment ------------------------------------------------------


def _pull(gh: Server, fork: CommitBuilder, number: int, rev: str, body: str = MARK,
          user: str = "alice") -> str:
    sha = _push(fork, rev, f"refs/pull/{number}/head")
    gh.state.add_pull(FORK, number, title=f"pr {number}", body=body, head=f"b{number}",
                      head_sha=sha, base="main", user=user, draft=False)
    return sha


@pytest.fixture
def carry9(gh: Server, fork: CommitBuilder, series_root: Path) -> dict[str, str]:
    """A 4-patch series (the last adds a guarded block), carry's #9 with all of it, and
    alice's #1 with its first three commits."""
    fork.commit("core: guard\n\nSigned-off-by: logprobz <logprobz@example.com>\n",
                {"src/guard.py": GUARD})
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    _pull(gh, fork, 9, "carry/demo", MARK + "\nthe consolidated PR", user="carry-bot")
    _pull(gh, fork, 1, "carry/demo~1")
    return env


def _supersede(fork: CommitBuilder, env: dict[str, str], *extra: str,
               by: int = 9) -> tuple[int, dict[str, Any], str]:
    r = run_carry("supersede", "demo", "--by", str(by), "--forge-repo", FORK, "--repo",
                  str(fork.path), "--json", *extra, env=env)
    return r.code, json.loads(r.out) if r.out.strip() else {}, r.err


def _verdicts(out: dict[str, Any]) -> dict[int, tuple[str, str]]:
    return {x["number"]: (x["verdict"], x["why"]) for x in out["pulls"]}


def test_a_foreign_pr_with_carrys_marker_supersedes_nothing(
        gh: Server, fork: CommitBuilder, carry9: dict[str, str]) -> None:
    _pull(gh, fork, 10, "carry/demo", MARK + "\nI carry demo too", user="mallory")
    code, _, err = _supersede(fork, carry9, "--apply", by=10)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("carry: error: #10 is not carry's PR for series demo: its body "
                          "starts with carry's marker, but it was opened by mallory from "
                          f"{FORK}; carry's PRs are those carry-bot opens from {FORK}")
    assert gh.state.writes() == []


def test_a_done_marker_someone_else_wrote_is_not_carrys_comment(
        gh: Server, fork: CommitBuilder, carry9: dict[str, str]) -> None:
    gh.state.add_comment(FORK, 1, "<!-- carry:superseded-by=9 -->", "mallory")
    code, out, err = _supersede(fork, carry9, "--apply")
    assert code == 0, err
    assert out["pulls"][0]["actions"] == ["commented", "closed"]
    mine = [c for c in gh.state.repos[FORK].comments if c.user == "carry-bot"]
    assert [c.issue for c in mine] == [1]


# -- 2. what counts as contained -------------------------------------------------------------


def test_whitespace_is_a_change_and_so_is_a_merge_that_adds_a_file(
        gh: Server, fork: CommitBuilder, carry9: dict[str, str]) -> None:
    fork.checkout("main")
    git(fork.path, "checkout", "-q", "-b", "dedent")
    fork.commit("core: guard", {"src/guard.py": DEDENTED})  # Python: `done` now always runs
    _pull(gh, fork, 2, "dedent")
    tree = git(fork.path, "mktree", input=(git(fork.path, "ls-tree", "carry/demo") + "\n" +
                                          git(fork.path, "ls-tree", "dedent", "README").replace(
                                              "\tREADME", "\tEVIL")).encode())
    evil = git(fork.path, "commit-tree", tree, "-p", "carry/demo", "-p", "main", "-m",
               "Merge main")  # nothing to merge, and a file no parent has
    _pull(gh, fork, 3, evil)
    # a clean merge of two branches that each carry one of #9's commits is contained
    then = {"GIT_COMMITTER_DATE": "@1000000000 +0000"}  # new commits, whenever this runs
    git(fork.path, "checkout", "-q", "-b", "left", "main")
    git(fork.path, "cherry-pick", "carry/demo~3", env=then)
    git(fork.path, "checkout", "-q", "-b", "right", "main")
    git(fork.path, "cherry-pick", "carry/demo", env=then)
    git(fork.path, "merge", "-q", "--no-edit", "left", env=then)
    _pull(gh, fork, 4, "right")
    octopus = git(fork.path, "commit-tree", "carry/demo^{tree}", "-p", "carry/demo", "-p",
                  "left", "-p", "main", "-m", "octopus")
    _pull(gh, fork, 5, octopus)
    code, out, err = _supersede(fork, carry9, "--apply")
    assert code == 0, err
    assert _verdicts(out) == {
        1: ("close", "every commit is in #9"),
        2: ("keep", "1 of its 1 commit(s) are not in #9"),
        3: ("keep", "1 of its 5 commit(s) are not in #9"),
        4: ("close", "every commit is in #9"),
        5: ("keep", "1 of its 6 commit(s) are not in #9"),
    }
    closed = sorted(n for n, p in gh.state.repos[FORK].pulls.items() if p.state == "closed")
    assert closed == [1, 4]


# -- 3. a run that dies after GitHub closed the PR --------------------------------------------


def _killed_on(gh: Server, method: str, path: str, args: list[str],
               env: dict[str, str]) -> int:
    """Run carry ARGS; the double SIGKILLs it the moment it has answered METHOD PATH, so
    GitHub did what was asked and carry never learns it. Its exit code."""
    procs: list[subprocess.Popen[bytes]] = []

    def kill(m: str, p: str) -> None:
        if (m, p) == (method, path) and procs:
            procs[0].send_signal(signal.SIGKILL)
            gh.state.after_answer = None

    gh.state.after_answer = kill
    procs.append(subprocess.Popen([sys.executable, "-m", "carry", *args],
                                  env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    return procs[0].wait()


def _provenance(root: Path) -> dict[str, tuple[str, str]]:
    return {p.pr: (p.state, p.superseded_by)
            for p in seriesmod.find(root, "demo").manifest.provenance}


def test_a_kill_right_after_the_close_is_recorded_by_the_next_run(
        gh: Server, fork: CommitBuilder, carry9: dict[str, str], series_root: Path) -> None:
    _pull(gh, fork, 2, "carry/demo~2")
    args = ["supersede", "demo", "--by", "9", "--forge-repo", FORK, "--repo", str(fork.path),
            "--apply"]
    assert _killed_on(gh, "PATCH", f"/repos/{FORK}/pulls/1", args, carry9) == -signal.SIGKILL
    pulls = gh.state.repos[FORK].pulls
    assert (pulls[1].state, pulls[2].state) == ("closed", "open")
    assert f"{FORK}#1" not in _provenance(series_root)
    dry = run_carry(*args[:-1], env=carry9)
    assert dry.code == 0, dry.err
    assert "#1 pr 1 (alice): closed, with carry's comment for #9, by an earlier run that never " \
           "recorded it -> would record" in dry.out
    code, out, err = _supersede(fork, carry9, "--apply")
    assert code == 0, err
    assert [x["number"] for x in out["unrecorded"]] == [1]
    assert out["unrecorded"][0]["actions"] == ["recorded"]
    assert out["closing"] == [2]
    assert _provenance(series_root)[f"{FORK}#1"] == ("closed", f"{FORK}#9")
    assert _provenance(series_root)[f"{FORK}#2"] == ("closed", f"{FORK}#9")
    assert sorted(c.issue for c in gh.state.repos[FORK].comments) == [1, 2]  # one each
    writes = len(gh.state.writes())
    code, out, err = _supersede(fork, carry9, "--apply")  # and then there is nothing to do
    assert code == 0 and out["unrecorded"] == [] and out["closing"] == [], err
    assert len(gh.state.writes()) == writes


def test_a_closed_pr_with_someone_elses_done_marker_is_not_recorded(
        gh: Server, fork: CommitBuilder, carry9: dict[str, str], series_root: Path) -> None:
    gh.state.repos[FORK].pulls[1].state = "closed"
    gh.state.add_comment(FORK, 1, "<!-- carry:superseded-by=9 -->", "mallory")
    code, out, err = _supersede(fork, carry9, "--apply")
    assert code == 0 and out["unrecorded"] == [], err
    assert f"{FORK}#1" not in _provenance(series_root)


def _read_only(root: Path) -> list[str]:
    """A command prefix that runs with `root` mounted read-only, in a mount namespace of its
    own (root ignores file modes; a read-only mount stops it too)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot make a mount namespace here")
    return ["unshare", "-m", "sh", "-c", 'mount --bind "$0" "$0" && '
            'mount -o remount,bind,ro "$0" "$0" && exec "$@"', str(root)]


def test_a_read_only_series_is_refused_before_any_close(
        gh: Server, fork: CommitBuilder, carry9: dict[str, str], series_root: Path) -> None:
    prefix = _read_only(series_root)
    args = ["supersede", "demo", "--by", "9", "--forge-repo", FORK, "--repo", str(fork.path),
            "--apply"]
    proc = subprocess.run([*prefix, sys.executable, "-m", "carry", *args],
                          env={**os.environ, **carry9}, capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("carry: error: cannot write series demo: ")
    assert gh.state.writes() == [] and gh.state.repos[FORK].pulls[1].state == "open"
    code, out, err = _supersede(fork, carry9, "--apply")
    assert code == 0 and out["closing"] == [1], err
    assert _provenance(series_root)[f"{FORK}#1"] == ("closed", f"{FORK}#9")
    assert [c.issue for c in gh.state.repos[FORK].comments] == [1]
