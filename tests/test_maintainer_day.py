"""A maintainer's day, walked through as a user would (F12): what a session-6 walk found.
A range whose branch was cut before upstream moved on, a PR whose patch a resolution changed,
an edit of a series based on a bare commit, the DCO hint, and the reminder to commit a new
version. Real git, the CLI, the GitHub double over HTTP."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tests import github_server
from tests.conftest import (
    FORK,
    TOBY,
    CommitBuilder,
    forge_env,
    git,
    import_and_apply,
    run_carry,
    util,
)


def _cut_before_upstream_moved(up: CommitBuilder) -> str:
    """`feature` from `base`; then main changes the line feature changes. Returns the fork
    point."""
    fork_point = up.rev("base")
    git(up.path, "checkout", "-q", "-b", "feature", "base")
    up.commit("util: h1 returns 10", {"src/util.py": util(h1=10)})
    up.commit("util: add extra", {"src/extra.py": "E = 1\n"})
    git(up.path, "checkout", "-q", "main")
    up.commit("upstream: h1 returns 5 (#12)", {"src/util.py": util(h1=5)})
    return fork_point


def test_a_range_whose_branch_was_cut_before_upstream_moved_is_based_on_its_fork_point(
        upstream: CommitBuilder, tmp_path: Path) -> None:
    """`--range upstream/main..BRANCH` (what `init` tells users to run) names commits that
    apply where BRANCH left main, as `git format-patch` does; the manifest's base was main's
    tip, so every later replay failed with 'does not apply' instead of a conflict."""
    fork_point = _cut_before_upstream_moved(upstream)
    checkout = tmp_path / "series-checkout"
    git(tmp_path, "init", "-q", str(checkout))
    env = {"CARRY_SERIES_DIR": str(checkout / "series")}
    args = ("--repo", str(upstream.path))
    r = run_carry("import", "demo", "--range", "main..feature", *args, env=env)
    assert r.code == 0, r.err
    manifest = tomllib.loads((checkout / "series" / "demo" / "series.toml").read_text())
    assert manifest["base"]["commit"] == fork_point
    # the new version is written, not committed: the command that commits it is printed
    assert f"commit it: git -C {checkout} add -- series/demo" in r.out
    assert run_carry("apply", "demo", "--onto", fork_point, "--branch", "carry/back", *args,
                     env=env).code == 0
    assert git(upstream.path, "rev-parse", "carry/back^{tree}") == \
        git(upstream.path, "rev-parse", "feature^{tree}")
    again = run_carry("rebase", "demo", "--onto", "main", "--json", *args, env=env)
    assert again.code == 1, again.err
    [res] = json.loads(again.out)
    assert res["status"] == "conflict" and res["conflict"]["paths"] == ["src/util.py"]


def test_check_dco_names_the_series_in_the_command_to_run(upstream: CommitBuilder,
                                                          series_root: Path) -> None:
    _cut_before_upstream_moved(upstream)
    env = {"CARRY_SERIES_DIR": str(series_root)}
    assert run_carry("import", "my-fix", "--range", "main..feature", "--repo",
                     str(upstream.path), env=env).code == 0
    r = run_carry("check", "my-fix", "--dco", env=env)
    assert r.code == 1
    assert "each author signs their own: carry trailers my-fix --signoff" in " ".join(r.out.split())
    assert any("carry trailers my-fix --signoff" in ln  # folded, but never inside the command
               for ln in r.out.splitlines())


def test_edit_of_a_series_based_on_a_bare_commit_names_its_worktree_base_short(
        upstream: CommitBuilder, series_root: Path) -> None:
    fork_point = _cut_before_upstream_moved(upstream)
    env = {"CARRY_SERIES_DIR": str(series_root)}
    args = ("--repo", str(upstream.path))
    assert run_carry("import", "demo", "--range", f"{fork_point}..feature", *args,
                     env=env).code == 0
    r = run_carry("edit", "demo", "1", "--json", *args, env=env)
    assert r.code == 0, r.err
    stop = json.loads(r.out)
    assert Path(stop["worktree"]).name == f"base-{fork_point[:12]}"
    assert stop["branch"] == f"refs/heads/carry/demo/base-{fork_point[:12]}"
    assert run_carry("rebase", "--abort", *args, env=env).code == 0


def test_pr_finds_a_patch_a_resolution_changed_by_its_author_date_and_message(
        gh: github_server.RunningServer, fork: CommitBuilder, series_root: Path) -> None:
    """A replay that merged a patch into other lines, or a recorded resolution, changes its
    patch-id; carry keeps its author, date and message, so the PR still carries it."""
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    second = git(fork.path, "rev-parse", "carry/demo~1")
    info = git(fork.path, "log", "-1", "--format=%an%n%ae%n%ad", "--date=raw", second)
    name, email, date = info.splitlines()
    assert (name, email) == TOBY
    # patch 2 as a resolution leaves it: another body, the same author, date and message
    git(fork.path, "checkout", "-q", "--detach", "carry/demo~2")
    (fork.path / "src" / "util.py").write_text("def h20():\n    return 21  # resolved\n")
    git(fork.path, "add", "src/util.py")
    message = git(fork.path, "log", "-1", "--format=%B", second)
    resolved = git(fork.path, "commit-tree", git(fork.path, "write-tree"), "-p", "HEAD",
                   env={"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
                        "GIT_AUTHOR_DATE": date}, input=(message + "\n").encode())
    git(fork.path, "checkout", "-q", "-f", resolved)
    third = git(fork.path, "log", "-1", "--format=%B", "carry/demo")
    git(fork.path, "cherry-pick", "--allow-empty", "carry/demo")
    git(fork.path, "branch", "-f", "carry/resolved", "HEAD")
    assert git(fork.path, "log", "-1", "--format=%B", "carry/resolved") == third
    r = run_carry("pr", "demo", "--repo", str(fork.path), "--branch", "carry/resolved",
                  "--forge-repo", FORK, "--base", "main", "--dry-run", "--json", env=env)
    assert r.code == 0, r.err
    body = json.loads(r.out)["body"]
    assert f"`{resolved[:12]}` `0002-" in body
    assert json.loads(r.out)["missing"] == []
