"""carry pr and carry supersede against a real HTTP GitHub-API server on 127.0.0.1,
through PyGithub, with a real bare repository as the fork remote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from carry.publish import repository
from tests import github_server
from tests.conftest import (
    FORGE_TOKEN,
    FORK,
    CommitBuilder,
    forge_env,
    git,
    import_and_apply,
    run_carry,
)

TOKEN = FORGE_TOKEN


def test_pr_dry_run_touches_nothing(gh: github_server.RunningServer, fork: CommitBuilder,
                                    series_root: Path, tmp_path: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    r = run_carry("pr", "demo", "--repo", str(fork.path), "--branch", "carry/demo",
                  "--forge-repo", FORK, "--base", "main", "--dry-run", "--json", env=env)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["action"] == "would-open" and out["missing"] == []
    assert "<!-- carry:series=demo -->" in out["body"]
    assert "## Test Plan" in out["body"] and "## AI assistance" in out["body"]
    assert "- Patch 0003: `Assisted-by: OpenAI Codex`." in out["body"]
    assert out["looked_up"] is True and gh.state.requests  # it read the open PRs
    assert gh.state.writes() == []
    assert git(fork.path, "ls-remote", "origin", "refs/heads/carry/demo") == ""


def test_pr_dry_run_names_the_pr_it_would_update(gh: github_server.RunningServer,
                                                 fork: CommitBuilder, series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    args = ["pr", "demo", "--repo", str(fork.path), "--branch", "carry/demo",
            "--forge-repo", FORK, "--base", "main"]
    opened = json.loads(run_carry(*args, "--json", env=env).out)
    writes = len(gh.state.writes())
    r = run_carry(*args, "--dry-run", env=env)
    assert r.code == 0, r.err
    head = git(fork.path, "rev-parse", "carry/demo")[:12]
    assert r.out.splitlines()[0] == (f"dry run: would push {head} to carry/demo on origin and "
                                     f"update {FORK}#{opened['number']}")
    assert len(gh.state.writes()) == writes
    offline = run_carry(*args, "--dry-run", env={**env, "GITHUB_TOKEN": ""})
    assert offline.code == 0, offline.err
    assert "would push" in offline.out and f"open a draft PR in {FORK} against main" in offline.out
    assert "no GitHub token, so whether a PR for this series set is open already was not " \
        "checked" in offline.out
    bad = run_carry(*args, "--dry-run", env={**env, "GITHUB_TOKEN": "ghp_with space"})
    assert bad.code == 2 and len(bad.err.strip().splitlines()) == 1  # not "no token"
    assert "holds characters that an HTTP header cannot carry" in bad.err


def test_pr_opens_once_then_updates(gh: github_server.RunningServer, fork: CommitBuilder,
                                    series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
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
    writes = len(gh.state.writes())
    same = run_carry(*args, env=env)
    assert same.code == 0, same.err
    assert json.loads(same.out)["action"] == "unchanged"  # same branch, title and body
    assert len(gh.state.writes()) == writes
    fork.commit("core: follow-up 2", {"src/more.py": "Y = 2\n"})
    assert run_carry("import", "demo", "--repo", str(fork.path), "--range", "main..feature",
                     env=env).code == 0
    assert run_carry("apply", "demo", "--repo", str(fork.path), "--onto", "main", "--branch",
                     "carry/demo", env=env).code == 0
    again = run_carry(*args, env=env)
    assert again.code == 0, again.err
    assert json.loads(again.out)["action"] == "updated"
    assert len(gh.state.repos[FORK].pulls) == 1


def test_pr_refuses_a_branch_without_the_series(gh: github_server.RunningServer,
                                                fork: CommitBuilder, series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    r = run_carry("pr", "demo", "--repo", str(fork.path), "--branch", "main",
                  "--forge-repo", FORK, "--base", "main", env=env)
    assert r.code == 2
    assert "does not carry 3 series patch(es)" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert gh.state.requests == []


@pytest.mark.parametrize("case", ["missing", "bad", "rate"])
def test_forge_errors_are_one_line_and_never_print_the_token(
        case: str, gh: github_server.RunningServer, fork: CommitBuilder,
        series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
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
    assert "No validation report of this tree was given." in before
    v = run_carry("validate", "good", "--repo", str(up.path), "--commit", "carry/good",
                  "--engine", "local", env=env)
    assert v.code == 0, v.out + v.err
    body = json.loads(run_carry(*pr_args, env=env).out)["body"]
    assert "9 tests passed and 1 skipped across the three suites" in body
    assert ("python -m pytest -q -p no:cacheprovider \\\n  tests/test_core.py \\\n"
            "  tests/unit") in body
    assert "- [x] Test commands and current results are included." in body


def test_forge_issue_methods_list_only_open_issues_with_the_marker(
        gh: github_server.RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from carry.publish import github as forge

    mark = "<!-- carry:tracking "
    gh.state.add_pull(FORK, title="pr", body=f"{mark}series=x -->", head="h", head_sha="1" * 40,
                      base="main", user="alice", draft=False)
    gh.state.add_issue(FORK, title="other", body="no marker", user="bob")
    gh.state.add_issue(FORK, title="old", body=f"{mark}series=x -->", user="bob", state="closed")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    f = forge.Forge.connect(gh.url, forge.token_from_env())  # registers it for scrubbing
    made = repository.repo(f, FORK).create_issue("tracked", f"{mark}series=x -->\n{TOKEN}")
    assert [i.number for i in repository.repo(f, FORK).open_issues(mark)] == [made.number]
    assert TOKEN not in gh.state.repos[FORK].issues[made.number].body  # scrubbed on the way out
    repository.repo(f, FORK).edit_issue(made.number, title="renamed")
    repository.repo(f, FORK).close_issue(made.number, "fixed")
    issue = gh.state.repos[FORK].issues[made.number]
    assert (issue.title, issue.state) == ("renamed", "closed")
    assert repository.repo(f, FORK).open_issues(mark) == []
    assert [m for m, _ in gh.state.writes()] == ["POST", "PATCH", "POST", "PATCH"]
