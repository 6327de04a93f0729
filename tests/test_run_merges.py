"""A run of patches with disjoint paths is merged once, and when that merge conflicts it is
taken apart (`runs._blame`): the patches before the one it blames take their trees from it,
and the blamed patch's conflict is the run's, so no patch of the run is merged again, neither
by the replay nor by the automatic resolution that reads the conflict's stages. Every result
is the one a merge per patch gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from carry.git import Ident, Repo
from carry.replay import rerere
from carry.replay.runs import PatchResult, run_steps
from tests.conftest import CommitBuilder, git

WHO = Ident("C O Mitter", "committer@example.com", "1790000000 +0000")
LINES = "".join(f"line {i}\n" for i in range(20))


def _series(up: CommitBuilder) -> list[str]:
    """Four patches on `base`, each on a file of its own; upstream then changes the line
    that the third patch changes, and a line of the first patch's file that it does not."""
    up.commit("files", {f"f{i}.txt": LINES for i in range(4)})
    git(up.path, "tag", "-f", "base")
    git(up.path, "checkout", "-q", "-b", "feature")
    for i in range(4):
        up.commit(f"P{i}", {f"f{i}.txt": LINES.replace("line 5\n", f"patch {i}\n")})
    up.checkout("main")
    git(up.path, "reset", "-q", "--hard", "base")
    up.commit("upstream", {"f2.txt": LINES.replace("line 5\n", "upstream\n"),
                           "f0.txt": LINES.replace("line 15\n", "upstream\n")})
    return git(up.path, "rev-list", "--reverse", "base..feature").split()


def _merges(trace: Path) -> int:
    said = trace.read_text() if trace.exists() else ""
    trace.unlink(missing_ok=True)
    return sum("merge-tree" in line for line in said.splitlines() if "built-in:" in line)


def _replay(repo: Repo, shas: list[str], batch: bool, auto: bool,
            skip: tuple[int, ...] = ()) -> tuple[object, ...]:
    steps = [PatchResult(i, f"{i:04d}.patch", "", "", source=s) for i, s in enumerate(shas, 1)]
    for i in skip:
        steps[i].status = "skipped"  # type: ignore[assignment]
    head, stop, paths = run_steps(repo, steps, repo.rev_parse("main"), WHO, batch=batch,
                                  recorded=rerere.Recorded(auto=auto))
    return head, stop, paths, [(s.status, s.commit) for s in steps]


@pytest.mark.parametrize("auto", [True, False])
def test_a_conflicted_run_is_merged_once(upstream: CommitBuilder, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch, auto: bool) -> None:
    shas = _series(upstream)
    repo = Repo.open(upstream.path)
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    one_each = _replay(repo, shas, batch=False, auto=auto)
    assert _merges(trace) == 3  # P0, P1 and P2, where it stops
    batched = _replay(repo, shas, batch=True, auto=auto)
    assert _merges(trace) == 1  # the run's merge, and nothing for its conflict
    assert batched == one_each
    head, stop, paths, statuses = batched
    assert (stop, paths) == (2, ["f2.txt"])
    assert [s for s, _ in statuses] == ["applied", "applied", "conflict", "pending"]
    # the forecast's replay after the stop, the conflicting patch left out: one run again
    assert _replay(repo, shas, batch=True, auto=auto, skip=(2,)) == \
        _replay(repo, shas, batch=False, auto=auto, skip=(2,))
    repo.close()


def test_a_run_of_one_that_conflicts_is_merged_once(upstream: CommitBuilder, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The conflicting patch alone in its run: its run's merge is its own, and the
    automatic resolution reads that merge's stages rather than merging again."""
    shas = _series(upstream)[2:3]
    repo = Repo.open(upstream.path)
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    batched = _replay(repo, shas, batch=True, auto=True)
    assert _merges(trace) == 1
    assert batched[1:3] == (0, ["f2.txt"])
    repo.close()


def test_a_blamed_conflict_that_resolves_by_itself_goes_on(upstream: CommitBuilder,
                                                            tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """The blamed patch's conflict resolves by itself (both sides added an entry to one
    dict) from the run's merge, and the run's later patches go on one by one: the same
    commits as a merge per patch, with fewer merges."""
    table = 'TABLE = {\n    "a": 1,\n    "b": 2,\n}\n'
    upstream.commit("files", {**{f"f{i}.txt": LINES for i in range(4)}, "t.py": table})
    git(upstream.path, "tag", "-f", "base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("P0", {"f0.txt": LINES.replace("line 5\n", "patch 0\n")})
    upstream.commit("P1", {"t.py": table.replace('    "b": 2,\n', '    "b": 2,\n    "p": 4,\n')})
    upstream.commit("P2", {"f2.txt": LINES.replace("line 5\n", "patch 2\n")})
    upstream.checkout("main")
    git(upstream.path, "reset", "-q", "--hard", "base")
    ours = table.replace('    "b": 2,\n', '    "b": 2,\n    "u": 3,\n')
    upstream.commit("upstream", {"t.py": ours})
    shas = git(upstream.path, "rev-list", "--reverse", "base..feature").split()
    repo = Repo.open(upstream.path)
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    one_each = _replay(repo, shas, batch=False, auto=True)
    assert _merges(trace) == 3
    batched = _replay(repo, shas, batch=True, auto=True)
    assert _merges(trace) == 2  # the run's, then P2's after the resolution
    assert batched == one_each
    assert [s for s, _ in batched[3]] == ["applied"] * 3  # type: ignore[index]
    assert b'"u": 3' in git(upstream.path, "show", f"{batched[0]}:t.py").encode()
    repo.close()
