"""carry pr and supersede use the manifest's fork remote, and say which remote they looked for
and why when it is missing; the PR body names the commits it carries; status lists every
branch of a series with its tree, and --prune removes the per-tag branches a newer tag
replaced, never one someone else moved. Real git, the CLI, and the GitHub double."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from carry.series import store as seriesmod
from carry.series.store import Repository, Target
from tests import github_server
from tests.conftest import FORK, CommitBuilder, forge_env, git, import_and_apply, run_carry
from tests.test_supersede import _args, seeded  # noqa: F401 - the fixture
from tests.validate import synthetic

Server = github_server.RunningServer


def _fork_remote(root: Path, remote: str, name: str = "demo") -> None:
    s = seriesmod.find(root, name)
    s.manifest.fork = Repository(repo=FORK, remote=remote, url="https://github.com/lab/fork.git")
    seriesmod.save_manifest(s)


def _pr(fork: CommitBuilder, env: dict[str, str], *extra: str) -> tuple[int, str, str]:
    r = run_carry("pr", "demo", "--repo", str(fork.path), "--branch", "carry/demo",
                  "--forge-repo", FORK, "--base", "main", *extra, env=env)
    return r.code, r.out, r.err


def test_pr_pushes_to_the_manifests_fork_remote(gh: Server, fork: CommitBuilder,
                                                series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    git(fork.path, "remote", "rename", "origin", "lab")  # init found the fork as `lab`
    _fork_remote(series_root, "lab")
    code, out, err = _pr(fork, env, "--json")
    assert code == 0, err
    assert json.loads(out)["remote"] == "lab" and json.loads(out)["action"] == "opened"
    head = git(fork.path, "rev-parse", "carry/demo")
    assert git(fork.path, "ls-remote", "lab", "refs/heads/carry/demo").split()[0] == head


def test_a_missing_remote_is_named_with_where_its_name_came_from(
        gh: Server, fork: CommitBuilder, series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    _fork_remote(series_root, "lab")  # the manifest's remote, which this clone lacks
    code, out, err = _pr(fork, env, "--json")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert ("remote 'lab' (the [fork].remote of series demo) is not a remote of "
            f"{fork.path} (its remotes: origin)") in err
    assert json.loads(out)["hint"].startswith(
        f"git -C {fork.path} remote add lab https://github.com/lab/fork.git, or pass --remote")
    assert gh.state.writes() == []
    assert git(fork.path, "ls-remote", "origin", "refs/heads/carry/demo") == ""
    # no manifest remote and no origin: the default is named as the default
    _fork_remote(series_root, "")
    git(fork.path, "remote", "rename", "origin", "lab")
    git(fork.path, "branch", "-q", "-D", "main")  # the base only the remote would have
    code, out, err = _pr(fork, env, "--json")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "remote 'origin' (the default: no manifest names a [fork].remote) is not a " \
        f"remote of {fork.path} (its remotes: lab)" in err
    assert "unknown revision" not in err and json.loads(out)["hint"]


def test_supersede_reads_pull_requests_from_the_manifests_remote(
        gh: Server, fork: CommitBuilder, seeded: dict[str, str],  # noqa: F811
        series_root: Path) -> None:
    git(fork.path, "remote", "rename", "origin", "lab")
    _fork_remote(series_root, "lab")
    r = run_carry(*_args(fork), env=seeded)
    assert r.code == 0, r.err
    verdicts = {x["number"]: x["verdict"] for x in json.loads(r.out)["pulls"]}
    assert verdicts[1] == "close" and verdicts[3] == "keep"  # compared by patch-id via `lab`
    asked = len(gh.state.requests)
    _fork_remote(series_root, "gone")
    r = run_carry(*_args(fork), env=seeded)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert (f"remote 'gone' (the [fork].remote of series demo, whose repo is {FORK}) is not "
            f"a remote of {fork.path} (its remotes: lab)") in r.err
    assert len(gh.state.requests) == asked  # a local mistake, found before any request


def _validated(tmp_path: Path, root: Path, branch: str = "carry/good"
               ) -> tuple[CommitBuilder, dict[str, str]]:
    up = synthetic.upstream_project(tmp_path / "calc")
    synthetic.import_series(root, up.path, "good", "fix", sys.executable)
    env = {"CARRY_SERIES_DIR": str(root), "GH_TOKEN": "", "GITHUB_TOKEN": ""}
    assert run_carry("apply", "good", "--repo", str(up.path), "--onto", "v1", "--branch",
                     branch, env=env).code == 0
    v = run_carry("validate", "good", "--repo", str(up.path), "--commit", branch,
                  "--engine", "local", env=env)
    assert v.code == 0, v.out + v.err
    return up, env


def test_the_pr_body_names_the_pushed_commits_and_the_validated_tree(
        tmp_path: Path, series_root: Path) -> None:
    up, env = _validated(tmp_path, series_root)
    validated = git(up.path, "rev-parse", "carry/good")
    # the same tree, another commit: what a rebase that changed nothing but dates leaves
    again = git(up.path, "commit-tree", "carry/good^{tree}", "-p", "carry/good~1", "-m",
                "Test the state below the last boundary", env={
                    "GIT_COMMITTER_DATE": "2001-01-01T00:00:00Z"})
    git(up.path, "branch", "carry/good2", again)
    r = run_carry("pr", "good", "--repo", str(up.path), "--branch", "carry/good2",
                  "--forge-repo", FORK, "--base", "v1", "--dry-run", "--json", env=env)
    assert r.code == 0, r.err
    body = json.loads(r.out)["body"]
    tree = git(up.path, "rev-parse", "carry/good^{tree}")
    assert f"Validated head `{validated[:12]}`" not in body
    assert f"Validated tree `{tree[:12]}` on `" in body
    assert (f"`, as commit `{validated[:12]}`: the same tree as this PR's head "
            f"`{again[:12]}`.") in body
    assert f"This PR's head is `{again[:12]}`: 2 commits on `v1`." in body
    first = git(up.path, "rev-parse", "carry/good~1")
    assert f"- `{first[:12]}` `0001-" in body and f"- `{again[:12]}` `0002-" in body
    # the validated commit itself: the body says just that
    r = run_carry("pr", "good", "--repo", str(up.path), "--branch", "carry/good",
                  "--forge-repo", FORK, "--base", "v1", "--dry-run", "--json", env=env)
    assert f"Validated head `{validated[:12]}` on `" in json.loads(r.out)["body"]
    # status lists the series' own branch carry/NAME too (not carry/NAME2, another name)
    listed = _status(up, env)["branches"]
    assert [b["branch"] for b in listed] == ["carry/good"]  # type: ignore[attr-defined]


def _status(up: CommitBuilder, env: dict[str, str], *extra: str) -> dict[str, object]:
    r = run_carry("status", "good", "--repo", str(up.path), "--json", *extra, env=env)
    assert r.code == 0, r.err
    series: dict[str, object] = json.loads(r.out)["series"][0]
    return series


def test_status_lists_every_branch_and_prune_removes_only_obsolete_ones_carry_wrote(
        tmp_path: Path, series_root: Path) -> None:
    # a bare-tag branch as `--onto v1` wrote it before the target's name was used, validated
    up, env = _validated(tmp_path, series_root, "carry/good/v1")
    s = seriesmod.find(series_root, "good")
    s.manifest.targets = [Target(name="release", tags="v*", latest=1, kind="release")]
    seriesmod.save_manifest(s)
    cmd = ("--repo", str(up.path), "--json")
    old = run_carry("rebase", "good", "--onto", "v1", *cmd, env=env)
    assert old.code == 0, old.err
    # --onto a release tag writes the branch the target writes for that tag
    assert json.loads(old.out)[0]["branch"] == "refs/heads/carry/good/release-v1"
    new = run_carry("rebase", "good", *cmd, env=env)  # the target: its newest tag, v2
    assert json.loads(new.out)[0]["branch"] == "refs/heads/carry/good/release-v2"
    git(up.path, "branch", "carry/good/v1-mine", "carry/good/v1")
    st = _status(up, env)
    branches = {b["branch"]: b for b in st["branches"]}  # type: ignore[attr-defined]
    assert sorted(branches) == ["carry/good/release-v1", "carry/good/release-v2",
                                "carry/good/v1", "carry/good/v1-mine"]
    for name, b in branches.items():
        assert b["tree"] == git(up.path, "rev-parse", f"{name}^{{tree}}")
    # the validated tree is that of every branch with the same patches on v1: all named
    v = st["validation"]
    assert v["for_branches"] == ["carry/good/release-v1", "carry/good/v1",  # type: ignore
                                 "carry/good/v1-mine"]
    assert branches["carry/good/release-v1"]["obsolete"].startswith(
        "v1 is older than the 1 newest tag(s) of target release (v2)")
    assert branches["carry/good/v1"]["obsolete"] and not branches["carry/good/v1"]["kept"]
    assert not branches["carry/good/release-v2"]["obsolete"]
    assert not branches["carry/good/v1-mine"]["obsolete"]
    text = run_carry("status", "good", "--repo", str(up.path), env=env).out
    assert "`carry status good --prune` removes it" in text
    bare = run_carry("status", "--prune", "--repo", str(up.path), env=env)  # no NAME
    assert bare.code == 2 and "(hint: carry status good --prune)" in bare.err, bare.err
    # someone moves carry/good/v1: it is no longer carry's to remove
    git(up.path, "update-ref", "-m", "by hand", "refs/heads/carry/good/v1", "v1")
    pruned = _status(up, env, "--prune")
    by_name = {b["branch"]: b for b in pruned["branches"]}  # type: ignore[attr-defined]
    assert by_name["carry/good/v1"]["kept"] == "last written by 'by hand', not by carry"
    gone = [n for n, b in by_name.items() if b["pruned"]]
    assert gone == ["carry/good/release-v1"]
    heads = git(up.path, "for-each-ref", "--format=%(refname:short)", "refs/heads/carry/")
    assert sorted(heads.split()) == ["carry/good/release-v2", "carry/good/v1",
                                     "carry/good/v1-mine"]
    assert git(up.path, "rev-parse", "carry/good/v1") == git(up.path, "rev-parse", "v1")
