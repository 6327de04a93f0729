"""One rule for --repo. The default is the current directory's checkout when it defines a remote
the manifest names; the series checkout is never read as the clone, and a ref missing from it
(or from a repository without the manifest's remotes) says --repo."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import TOBY, CommitBuilder, git, run_carry


@dataclass
class Desk:
    """A maintainer's folders: upstream, a vLLM-like clone of it, the series checkout."""

    up: CommitBuilder
    clone: Path
    carry: Path

    @property
    def series(self) -> Path:
        return self.carry / "series"


@pytest.fixture
def desk(tmp_path: Path) -> Desk:
    work = tmp_path / "work"
    up = CommitBuilder.init(work / "up")
    up.commit("Initial import", {"src/core.py": "def f():\n    return 1\n"})
    up.tag("v1.0")
    clone = work / "vllm"
    git(work, "clone", "-q", "--origin", "upstream", str(up.path), str(clone))
    git(clone, "checkout", "-q", "-b", "my-branch")
    b = CommitBuilder(clone)
    b.commit("core: fix f", {"src/core.py": "def f():\n    return 2\n"}, author=TOBY)
    carry = CommitBuilder.init(work / "carry")
    carry.commit("root", {"README": "series live here\n"})
    r = run_carry("init", "my-fix", "--upstream", "acme/up", "--fork", "me/up", "--repo",
                  str(clone), cwd=carry.path)
    assert r.code == 0, r.err
    r = run_carry("import", "my-fix", "--repo", str(clone), "--range",
                  "upstream/main..my-branch", cwd=carry.path)
    assert r.code == 0, r.err
    return Desk(up, clone, carry.path)


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("carry: error: "), err
    return lines[0]


def test_the_series_checkout_is_never_read_as_the_clone(desk: Desk) -> None:
    refs = git(desk.carry, "for-each-ref")
    r = run_carry("rebase", "my-fix", cwd=desk.carry)
    assert r.code == 2
    line = _one_line(r.err)
    assert f"{desk.carry} is the series checkout" in line and "--repo PATH" in line
    assert "--fetch" not in line and "remote add" not in line
    assert git(desk.carry, "for-each-ref") == refs  # nothing written
    for cmd in (["range-diff", "my-fix", "v1"], ["validate", "my-fix", "--onto", "v1.0"],
                ["apply", "my-fix", "--onto", "v1.0", "--branch", "x"],
                ["ci", "run", "my-fix", "upstream-main"],
                ["pr", "my-fix", "--branch", "x", "--forge-repo", "me/up", "--base", "main"]):
        r = run_carry(*cmd, cwd=desk.carry)
        assert r.code == 2 and "--repo PATH names your vLLM clone" in _one_line(r.err), cmd


def test_a_ref_missing_from_the_series_checkout_names_repo(desk: Desk) -> None:
    """Given explicitly, the series checkout still gets the --repo hint, not --fetch."""
    r = run_carry("rebase", "my-fix", "--repo", str(desk.carry), cwd=desk.carry)
    line = _one_line(r.err)
    assert r.code == 2 and "ref 'upstream/main' is not in" in line
    assert "is the series checkout, not a clone of upstream: --repo PATH" in line
    assert "pass --fetch" not in line
    r = run_carry("rebase", "my-fix", "--repo", str(desk.carry), "--fetch", cwd=desk.carry)
    line = _one_line(r.err)
    assert r.code == 2 and "none of the remotes upstream, fork is defined" in line
    assert "is the series checkout" in line and "git remote add" not in line
    assert git(desk.carry, "remote") == ""


def test_a_repository_without_the_manifests_remotes_gets_the_hint_too(
        desk: Desk, tmp_path: Path) -> None:
    other = CommitBuilder.init(tmp_path / "other")
    other.commit("x", {"x": "x\n"})
    r = run_carry("apply", "my-fix", "--repo", str(other.path), "--onto", "upstream/main",
                  "--branch", "try", "--series-dir", str(desk.series))
    line = _one_line(r.err)
    assert r.code == 2 and "unknown revision 'upstream/main'" in line
    assert f"{other.path} defines none of the remotes fork, upstream" in line
    assert "--repo PATH names your vLLM clone" in line
    # from that repository, with no --repo, carry does not take it for the clone
    r = run_carry("apply", "my-fix", "--onto", "upstream/main", "--branch", "try",
                  "--series-dir", str(desk.series), cwd=other.path)
    assert r.code == 2 and "no --repo given" in _one_line(r.err)


def test_from_the_clone_every_command_works_without_repo(desk: Desk) -> None:
    """The clone defines the manifest's upstream remote: it is the default everywhere, and
    the series are found in the sibling series checkout."""
    r = run_carry("rebase", "my-fix", "--target", "upstream-main", cwd=desk.clone)
    assert r.code == 0, r.err
    head = git(desk.clone, "rev-parse", "carry/my-fix/upstream-main")
    r = run_carry("apply", "my-fix", "--onto", "v1.0", "--branch", "try", cwd=desk.clone)
    assert r.code == 0, r.err
    st = json.loads(run_carry("status", "my-fix", "--json", cwd=desk.clone).out)
    assert st["repo"] == str(desk.clone)
    assert [b["head"] for b in st["series"][0]["branches"]] == [head]
    r = run_carry("range-diff", "my-fix", "v1", "--json", cwd=desk.clone)
    assert r.code == 0, r.err
    # from the series checkout, status has no repository to read and says so
    r = run_carry("status", "my-fix", cwd=desk.carry)
    assert r.code == 0 and "no --repo given" in r.err and "carry/my-fix" not in r.out


def test_carry_repo_names_the_clone_from_anywhere(desk: Desk) -> None:
    r = run_carry("rebase", "my-fix", "--target", "upstream-main", cwd=desk.carry,
                  env={"CARRY_REPO": str(desk.clone)})
    assert r.code == 0, r.err
    assert git(desk.clone, "rev-parse", "--verify", "-q", "carry/my-fix/upstream-main")
    help_text = run_carry("rebase", "--help").out
    assert "CARRY_REPO" in help_text and "manifest names" in help_text
