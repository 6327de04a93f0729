"""carry pr and carry supersede against a real HTTP GitHub-API server on 127.0.0.1,
through PyGithub, with a real bare repository as the fork remote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import github_server
from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, run_carry

TOKEN = "ghp_test_secret_value_1234567890"
FORK = "lab/fork"


@pytest.fixture
def gh() -> Iterator[github_server.RunningServer]:
    server = github_server.start(TOKEN)
    server.state.repo(FORK)
    yield server
    server.stop()


@pytest.fixture
def fork(upstream: CommitBuilder, tmp_path: Path) -> CommitBuilder:
    """A working clone with a 3-patch series on `feature`, and a bare `origin` remote."""
    b = upstream
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(b.path, "remote", "add", "origin", str(bare))
    git(b.path, "push", "-q", "origin", "main")
    git(b.path, "fetch", "-q", "origin")
    git(b.path, "checkout", "-q", "-b", "feature")
    b.commit("core: fix f\n\nSigned-off-by: Toby Mao <toby@example.com>\n",
             {"src/core.py": "def f():\n    return 2\n"}, author=TOBY)
    b.commit("util: add h20\n\nSigned-off-by: Toby Mao <toby@example.com>\n",
             {"src/util.py": "def h20():\n    return 20\n"}, author=TOBY)
    b.commit("core: follow-up\n\nAssisted-by: OpenAI Codex\n"
             "Signed-off-by: logprobz <logprobz@example.com>\n",
             {"src/extra.py": "X = 1\n"}, author=LOGPROBZ)
    return b


def _env(gh: github_server.RunningServer, root: Path) -> dict[str, str]:
    return {"GH_TOKEN": "", "GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": gh.url,
            "CARRY_SERIES_DIR": str(root)}


def _import_and_apply(fork: CommitBuilder, env: dict[str, str]) -> None:
    r = run_carry("import", "demo", "--repo", str(fork.path), "--range", "main..feature",
                  env=env)
    assert r.code == 0, r.err
    r = run_carry("apply", "demo", "--repo", str(fork.path), "--onto", "main", "--branch",
                  "carry/demo", env=env)
    assert r.code == 0, r.err


def test_pr_dry_run_touches_nothing(gh: github_server.RunningServer, fork: CommitBuilder,
                                    series_root: Path, tmp_path: Path) -> None:
    env = _env(gh, series_root)
    _import_and_apply(fork, env)
    r = run_carry("pr", "demo", "--repo", str(fork.path), "--branch", "carry/demo",
                  "--forge-repo", FORK, "--base", "main", "--dry-run", "--json", env=env)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["action"] == "would-open" and out["missing"] == []
    assert "<!-- carry:series=demo -->" in out["body"]
    assert "## Test Plan" in out["body"] and "## AI assistance" in out["body"]
    assert "OpenAI Codex: patches 0003" in out["body"]
    assert gh.state.requests == []
    assert git(fork.path, "ls-remote", "origin", "refs/heads/carry/demo") == ""


def test_pr_opens_once_then_updates(gh: github_server.RunningServer, fork: CommitBuilder,
                                    series_root: Path) -> None:
    env = _env(gh, series_root)
    _import_and_apply(fork, env)
    args = ["pr", "demo", "--repo", str(fork.path), "--branch", "carry/demo",
            "--forge-repo", FORK, "--base", "main", "--json"]
    first = run_carry(*args, env=env)
    assert first.code == 0, first.err
    opened = json.loads(first.out)
    assert opened["action"] == "opened"
    pulls = gh.state.repos[FORK].pulls
    assert list(pulls) == [opened["number"]]
    pull = pulls[opened["number"]]
    assert pull.draft and pull.head == "carry/demo" and pull.base == "main"
    assert pull.body.startswith("<!-- carry:series=demo -->")
    pushed = git(fork.path, "ls-remote", "origin", "refs/heads/carry/demo").split()[0]
    assert pushed == git(fork.path, "rev-parse", "carry/demo")
    again = run_carry(*args, env=env)
    assert again.code == 0, again.err
    assert json.loads(again.out)["action"] == "updated"
    assert len(gh.state.repos[FORK].pulls) == 1


def test_pr_refuses_a_branch_without_the_series(gh: github_server.RunningServer,
                                                fork: CommitBuilder, series_root: Path) -> None:
    env = _env(gh, series_root)
    _import_and_apply(fork, env)
    r = run_carry("pr", "demo", "--repo", str(fork.path), "--branch", "main",
                  "--forge-repo", FORK, "--base", "main", env=env)
    assert r.code == 2
    assert "does not carry 3 series patch(es)" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert gh.state.requests == []


def _seed_duplicates(gh: github_server.RunningServer, fork: CommitBuilder) -> None:
    bare = fork.path.parent / "origin.git"
    # 1: an older carry PR for the same series; 2: unrelated; 3: carries patch 0001 by id.
    gh.state.add_pull(FORK, 1, title="old carry PR", body="<!-- carry:series=demo -->\nold",
                      head="old", head_sha="1" * 40, base="main", user="alice", draft=True)
    gh.state.add_pull(FORK, 2, title="unrelated", body="docs", head="docs", head_sha="2" * 40,
                      base="main", user="bob", draft=False)
    git(fork.path, "checkout", "-q", "-b", "dup", "main")
    dup = fork.commit("core: fix f (resubmitted)", {"src/core.py": "def f():\n    return 2\n"})
    git(fork.path, "push", "-q", "origin", f"{dup}:refs/pull/3/head")
    gh.state.add_pull(FORK, 3, title="fix f again", body="", head="dup", head_sha=dup,
                      base="main", user="carol", draft=False)
    gh.state.add_pull(FORK, 9, title="consolidated", body="", head="carry/demo",
                      head_sha="9" * 40, base="main", user="carry-bot", draft=True)
    assert bare.exists()


def test_supersede_dry_run_then_apply_once(gh: github_server.RunningServer, fork: CommitBuilder,
                                           series_root: Path) -> None:
    env = _env(gh, series_root)
    _import_and_apply(fork, env)
    _seed_duplicates(gh, fork)
    args = ["supersede", "demo", "--by", "9", "--forge-repo", FORK, "--repo", str(fork.path),
            "--remote", "origin", "--base", "main", "--json"]
    dry = run_carry(*args, env=env)
    assert dry.code == 0, dry.err
    found = {c["number"]: c for c in json.loads(dry.out)["candidates"]}
    assert sorted(found) == [1, 3]
    assert found[1]["reasons"] == ["carry marker for this series"]
    assert found[3]["reasons"] == ["patch-id of 1 series patch(es)"]
    assert gh.state.repos[FORK].comments == []
    assert all(p.state == "open" for p in gh.state.repos[FORK].pulls.values())

    done = run_carry(*args, "--apply", env=env)
    assert done.code == 0, done.err
    pulls = gh.state.repos[FORK].pulls
    assert (pulls[1].state, pulls[2].state, pulls[3].state, pulls[9].state) == (
        "closed", "open", "closed", "open")
    bodies = [c.body for c in gh.state.repos[FORK].comments]
    assert len(bodies) == 2 and all(b.startswith("Superseded by #9") for b in bodies)

    pulls[1].state = "open"  # somebody reopened it: close again, never comment twice
    again = run_carry(*args, "--apply", env=env)
    assert again.code == 0, again.err
    assert json.loads(again.out)["candidates"][0]["actions"] == [
        "comment already posted", "closed"]
    assert len(gh.state.repos[FORK].comments) == 2 and pulls[1].state == "closed"


@pytest.mark.parametrize("case", ["missing", "bad", "rate"])
def test_forge_errors_are_one_line_and_never_print_the_token(
        case: str, gh: github_server.RunningServer, fork: CommitBuilder,
        series_root: Path) -> None:
    env = _env(gh, series_root)
    _import_and_apply(fork, env)
    if case == "missing":
        env["GITHUB_TOKEN"] = ""
    elif case == "bad":
        env["GITHUB_TOKEN"] = TOKEN + "x"
    else:
        gh.state.rate_limited = True
    r = run_carry("supersede", "demo", "--by", "9", "--forge-repo", FORK, "--apply", env=env)
    assert r.code == 2
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    expect = {"missing": "no GitHub token", "bad": "bad credentials",
              "rate": "rate limit exceeded"}[case]
    assert expect in lines[0]
    assert TOKEN not in r.err + r.out


def test_pr_body_quotes_the_last_validation_of_the_same_tree(tmp_path: Path,
                                                             series_root: Path) -> None:
    import sys

    from tests.validate import synthetic

    up = synthetic.upstream_project(tmp_path / "calc")
    synthetic.import_series(series_root, up.path, "good", "fix", sys.executable)
    env = {"CARRY_SERIES_DIR": str(series_root)}
    assert run_carry("apply", "good", "--repo", str(up.path), "--onto", "v1", "--branch",
                     "carry/good", env=env).code == 0
    pr_args = ["pr", "good", "--repo", str(up.path), "--branch", "carry/good", "--forge-repo",
               FORK, "--base", "main", "--dry-run", "--json"]
    before = json.loads(run_carry(*pr_args, env=env).out)["body"]
    assert "No validation report was given." in before
    v = run_carry("validate", "good", "--repo", str(up.path), "--commit", "carry/good",
                  "--engine", "local", env=env)
    assert v.code == 0, v.out + v.err
    body = json.loads(run_carry(*pr_args, env=env).out)["body"]
    assert "9 tests passed and 1 skipped across the three suites" in body
    assert "-m pytest -q -p no:cacheprovider tests/test_core.py tests/unit" in body
    assert "- [x] Test commands and current results are included." in body


def test_forge_issue_methods_list_only_open_issues_with_the_marker(
        gh: github_server.RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from carry import forge

    mark = "<!-- carry:tracking "
    gh.state.add_pull(FORK, title="pr", body=f"{mark}series=x -->", head="h", head_sha="1" * 40,
                      base="main", user="alice", draft=False)
    gh.state.add_issue(FORK, title="other", body="no marker", user="bob")
    gh.state.add_issue(FORK, title="old", body=f"{mark}series=x -->", user="bob", state="closed")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    f = forge.Forge.connect(gh.url, forge.token_from_env())  # registers it for scrubbing
    made = f.create_issue(FORK, "tracked", f"{mark}series=x -->\n{TOKEN}")
    assert [i.number for i in f.open_issues(FORK, mark)] == [made.number]
    assert TOKEN not in gh.state.repos[FORK].issues[made.number].body  # scrubbed on the way out
    f.edit_issue(FORK, made.number, title="renamed")
    f.close_issue(FORK, made.number, "fixed")
    issue = gh.state.repos[FORK].issues[made.number]
    assert (issue.title, issue.state) == ("renamed", "closed")
    assert f.open_issues(FORK, mark) == []
    assert [m for m, _ in gh.state.writes()] == ["POST", "PATCH", "POST", "PATCH"]
