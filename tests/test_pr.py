"""carry pr: one PR per series set, found by carry's marker whatever its branch, quoting only
each series' own validation of the proposed tree; through the CLI and real HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from carry.git import Repo
from carry.intake import importer
from carry.series import store as seriesmod
from carry.validate.run import last_report_path
from tests import github_server
from tests.conftest import FORK, CommitBuilder, forge_env, git, import_and_apply, run_carry
from tests.validate import synthetic

Server = github_server.RunningServer


def _pr(fork: CommitBuilder, branch: str, env: dict[str, str], *extra: str,
        names: tuple[str, ...] = ("demo",)) -> tuple[int, dict[str, object], str]:
    r = run_carry("pr", *names, "--repo", str(fork.path), "--branch", branch, "--forge-repo",
                  FORK, "--base", "main", "--json", *extra, env=env)
    return r.code, json.loads(r.out) if r.out.strip() else {}, r.err


def test_the_same_series_from_a_second_branch_updates_the_one_pr(
        gh: Server, fork: CommitBuilder, series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    # a PR that carries demo *and* another series is not demo's PR
    gh.state.add_pull(FORK, 5, title="both", body="<!-- carry:series=demo,other -->\nx",
                      head="carry/both", head_sha="5" * 40, base="main", user="carry-bot",
                      draft=True)
    code, first, err = _pr(fork, "carry/demo", env)
    assert code == 0, err
    assert first["action"] == "opened" and first["number"] == 6
    extra = git(fork.path, "commit-tree", "carry/demo^{tree}", "-p", "carry/demo", "-m",
                "an empty follow-up")  # a new head: the PR's head branch moves to it
    git(fork.path, "branch", "carry/demo-again", extra)
    fork.commit("core: follow-up 2", {"src/more.py": "Y = 2\n"})  # on feature, not pushed
    code, again, err = _pr(fork, "carry/demo-again", env)
    assert code == 0, err
    assert (again["action"], again["number"], again["head"]) == ("updated", 6, "carry/demo")
    assert sorted(gh.state.repos[FORK].pulls) == [5, 6]
    assert git(fork.path, "ls-remote", "origin", "refs/heads/carry/demo").split()[0] == extra
    assert git(fork.path, "ls-remote", "origin", "refs/heads/carry/demo-again") == ""


def _validated(tmp_path: Path, series_root: Path) -> tuple[CommitBuilder, dict[str, str]]:
    up = synthetic.upstream_project(tmp_path / "calc")
    synthetic.import_series(series_root, up.path, "good", "fix", sys.executable)
    env = {"CARRY_SERIES_DIR": str(series_root), "GH_TOKEN": "", "GITHUB_TOKEN": ""}
    assert run_carry("apply", "good", "--repo", str(up.path), "--onto", "v1", "--branch",
                     "carry/good", env=env).code == 0
    v = run_carry("validate", "good", "--repo", str(up.path), "--commit", "carry/good",
                  "--engine", "local", env=env)
    assert v.code == 0, v.out + v.err
    return up, env


def _report(up: CommitBuilder, tmp_path: Path, **change: str) -> str:
    path = last_report_path(Repo.open(str(up.path)), "good")
    data = json.loads(path.read_text())
    data.update(change)
    out = tmp_path / "report.json"
    out.write_text(json.dumps(data))
    return str(out)


def test_a_report_of_another_tree_or_a_failed_one_is_refused(tmp_path: Path,
                                                             series_root: Path) -> None:
    up, env = _validated(tmp_path, series_root)
    other = _report(up, tmp_path, head_tree="e" * 40)
    code, _, err = _pr(up, "carry/good", env, "--dry-run", "--validation", other,
                       names=("good",))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "validated tree eeeeeeeeeeee, not the tree of carry/good" in err
    failed = _report(up, tmp_path, status="failed", summary="1 failed, 9 passed")
    code, _, err = _pr(up, "carry/good", env, "--dry-run", "--validation", failed,
                       names=("good",))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "the validation of good on this tree failed: 1 failed, 9 passed" in err
    code, out, err = _pr(up, "carry/good", env, "--dry-run", "--validation", failed,
                         "--allow-failed", names=("good",))
    assert code == 0, err
    body = str(out["body"])
    assert "**This validation failed**, and the PR is published with `--allow-failed`." in body
    assert "- [ ] Test commands and current results are included." in body


def test_a_cache_hit_is_quoted_like_a_fresh_run(tmp_path: Path, series_root: Path) -> None:
    up, env = _validated(tmp_path, series_root)
    last_report_path(Repo.open(str(up.path)), "good").unlink()
    v = run_carry("validate", "good", "--repo", str(up.path), "--commit", "carry/good",
                  "--engine", "local", "--json", env=env)
    assert v.code == 0, v.err
    assert json.loads(v.out)["cached"] is True
    code, out, err = _pr(up, "carry/good", env, "--dry-run", names=("good",))
    assert code == 0, err
    body = str(out["body"])
    assert "Not validated yet" not in body
    assert "(answered from the results cache)" in body
    assert "9 tests passed and 1 skipped across the three suites" in body


def test_a_pr_over_two_series_has_each_ones_plan_result_and_ai(tmp_path: Path,
                                                               series_root: Path) -> None:
    up = synthetic.upstream_project(tmp_path / "calc")
    env = {"CARRY_SERIES_DIR": str(series_root)}
    importer.run(series_root, "fix-a",
        importer.Source(str(up.path), range="v1..fork/fix~1"), title="The fix")
    importer.run(series_root, "test-b",
        importer.Source(str(up.path), range="fork/fix~1..fork/fix"), title="Its test")
    git(up.path, "branch", "carry/both", "fork/fix")
    for name in ("fix-a", "test-b"):
        s = seriesmod.find(series_root, name)
        s.manifest.test.python, s.manifest.test.suites = sys.executable, list(synthetic.SUITES)
        seriesmod.save_manifest(s)
        v = run_carry("validate", name, "--repo", str(up.path), "--commit",
                      "v1..carry/both", "--engine", "local", env=env)
        assert v.code == 0, v.out + v.err
    code, out, err = _pr(up, "carry/both", env, "--dry-run", names=("fix-a", "test-b"))
    assert code == 0, err
    body = str(out["body"])
    assert body.startswith("<!-- carry:series=fix-a,test-b -->")
    assert "## Series fix-a: The fix" in body and "## Series test-b: Its test" in body
    assert "Not validated yet" not in body
    assert body.count("### Test Plan") == 2 and body.count("### Test Result") == 2
    assert body.count("Current head: 9 tests passed and 1 skipped across the three suites.") == 2
    assert body.count("- `tests/unit`: 3 passed, 1 skipped") == 2
    assert body.count("### AI assistance") == 2
    assert "\n## Purpose" not in body  # the cover's headings sit under their series
    # computed, not asserted: the covers are bare titles and no image pins the tests
    assert "- [ ] The purpose and the distinction from related PRs are described above." in body
    assert "- [x] Test commands and current results are included." in body
    assert "- [ ] The tests ran in an image pinned by digest." in body


def test_githubs_422_texts_reach_the_user_in_one_line(gh: Server, fork: CommitBuilder,
                                                       series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    gh.state.add_pull(FORK, 3, title="by hand", body="not carry's", head="carry/demo",
                      head_sha="3" * 40, base="main", user="alice", draft=False)
    code, _, err = _pr(fork, "carry/demo", env)  # refused before the push, not after
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "is the head of open PR #3 by alice, which is not carry's PR for demo" in err
    assert git(fork.path, "ls-remote", "origin", "refs/heads/carry/demo") == ""
    code, _, err = _pr(fork, "main", env, "--force")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "No commits between main and main" in err
    assert sorted(gh.state.repos[FORK].pulls) == [3]
