"""Bad input through the real CLI: one line on stderr, a non-zero exit, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CommitBuilder, git, run_carry


def state(*roots: Path) -> dict[str, bytes]:
    """Every file under the series folder and every ref of the repository."""
    out: dict[str, bytes] = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and "/objects/" not in str(p) and not p.name.endswith(".lock") \
                    and p.name not in ("index", "ORIG_HEAD", "FETCH_HEAD"):
                out[str(p)] = p.read_bytes()
    return out


@pytest.fixture
def setup(upstream: CommitBuilder, series_root: Path) -> tuple[CommitBuilder, Path]:
    upstream.commit("Change\n\nSigned-off-by: A U Thor <author@example.com>\n",
                    {"src/core.py": "changed\n"})
    upstream.branch("feature")
    r = run_carry("import", "demo", "--repo", str(upstream.path), "--range", "base..feature",
                  "--series-dir", str(series_root))
    assert r.code == 0, r.err
    return upstream, series_root


def one_line_error(r: object, *needles: str) -> None:
    code, out, err = r.code, r.out, r.err  # type: ignore[attr-defined]
    assert code != 0
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("carry: error: ")
    for n in needles:
        assert n in lines[0], lines[0]
    assert "Traceback" not in err and out == ""


CASES = {
    "corrupt-patch": (["apply", "demo", "--onto", "base", "--branch", "new"], "0001-"),
    "toml": (["apply", "demo", "--onto", "base", "--branch", "new"], "not valid TOML"),
    "unknown-series": (["apply", "nope", "--onto", "base", "--branch", "new"],
                       "unknown series 'nope'"),
    "bad-range": (["import", "demo", "--range", "base..nope"], "unknown revision 'nope'"),
    "bad-onto": (["apply", "demo", "--onto", "nope", "--branch", "new"],
                 "unknown revision 'nope'"),
    "no-repo": (["import", "demo", "--range", "base..feature"],
                "repository does not exist"),
    "not-a-repo": (["apply", "demo", "--onto", "base", "--branch", "new"],
                   "not a git repository"),
    "branch-exists": (["apply", "demo", "--onto", "base", "--branch", "feature"],
                      "branch 'feature' already exists", "--force"),
    "bad-branch-name": (["apply", "demo", "--onto", "base", "--branch", "a..b"],
                        "not a valid branch name"),
    "check-unknown": (["check", "nope"], "unknown series 'nope'"),
    "show-unknown": (["series", "show", "nope"], "unknown series 'nope'"),
    "check-no-repo": (["check", "demo", "--against-repo", "/nonexistent/repo"],
                      "repository does not exist"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(case: str, setup: tuple[CommitBuilder, Path], tmp_path: Path) -> None:
    repo, root = setup
    args, *needles = CASES[case]
    patch = next((root / "demo" / "patches").iterdir())
    if case == "corrupt-patch":
        patch.write_bytes(b"From nobody\n\nnot a patch at all\n")
    if case == "toml":
        (root / "demo" / "series.toml").write_text("name = [unterminated\n")
    repo_arg = str(repo.path)
    if case == "no-repo":
        repo_arg = str(tmp_path / "does-not-exist")
    if case == "not-a-repo":
        (tmp_path / "plain").mkdir()
        repo_arg = str(tmp_path / "plain")
    before = state(root, repo.path / ".git")
    cmd = list(args)
    if cmd[0] in ("import", "apply"):
        cmd += ["--repo", repo_arg]
    r = run_carry(*cmd, "--series-dir", str(root))
    one_line_error(r, *needles)
    assert state(root, repo.path / ".git") == before
    # Nothing left behind but the series and its lock file (series/.demo.lock, kept).
    assert sorted(p.name for p in root.iterdir()) == [".demo.lock", "demo"]


def test_force_moves_an_existing_branch(setup: tuple[CommitBuilder, Path]) -> None:
    repo, root = setup
    git(repo.path, "branch", "-f", "old", "base")
    r = run_carry("apply", "demo", "--repo", str(repo.path), "--onto", "base", "--branch",
                  "old", "--force", "--series-dir", str(root))
    assert r.code == 0, r.err
    assert git(repo.path, "rev-parse", "old^{tree}") == git(repo.path, "rev-parse",
                                                             "feature^{tree}")
    assert git(repo.path, "rev-parse", "old~1") == repo.rev("base")
    reflog = git(repo.path, "reflog", "show", "--format=%gs", "old")
    assert reflog.splitlines()[0] == "carry apply demo"


def test_branch_checked_out_in_a_worktree(setup: tuple[CommitBuilder, Path],
                                          tmp_path: Path) -> None:
    repo, root = setup
    git(repo.path, "worktree", "add", "-q", "-b", "busy", str(tmp_path / "wt"), "base")
    head = git(repo.path, "rev-parse", "busy")
    for extra in ([], ["--force"]):
        r = run_carry("apply", "demo", "--repo", str(repo.path), "--onto", "base", "--branch",
                      "busy", *extra, "--series-dir", str(root))
        one_line_error(r, "busy", "already exists" if not extra else "checked out in")
    assert git(repo.path, "rev-parse", "busy") == head
    # The main worktree's branch is protected the same way.
    r = run_carry("apply", "demo", "--repo", str(repo.path), "--onto", "base", "--branch",
                  "main", "--force", "--series-dir", str(root))
    one_line_error(r, "checked out in")


def test_apply_with_no_patches(setup: tuple[CommitBuilder, Path]) -> None:
    repo, root = setup
    for p in (root / "demo" / "patches").iterdir():
        p.unlink()
    r = run_carry("apply", "demo", "--repo", str(repo.path), "--onto", "base", "--branch",
                  "new", "--series-dir", str(root))
    one_line_error(r, "has no patches yet", "carry import")


def test_patch_that_does_not_apply(setup: tuple[CommitBuilder, Path]) -> None:
    repo, root = setup
    repo.checkout("base")
    repo.commit("Elsewhere", {"src/core.py": "something else entirely\n"})
    repo.branch("moved")
    r = run_carry("apply", "demo", "--repo", str(repo.path), "--onto", "moved", "--branch",
                  "new", "--series-dir", str(root))
    one_line_error(r, "does not apply onto")
    assert not git(repo.path, "branch", "--list", "new")


def test_usage_errors_exit_non_zero_without_traceback() -> None:
    for args in (["apply", "demo"], ["import"], ["import", "--bogus"], []):
        r = run_carry(*args)
        assert r.code == 2
        assert "Traceback" not in r.err
