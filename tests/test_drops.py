"""Patches that upstream already has are dropped with a reason, never conflicted: patch-id,
Change-Id / Link / cherry-pick trailers, provenance equivalents, and empty after replay."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from carry.git import Repo
from carry.replay.chain import load_chain
from carry.replay.drops import find_drops
from carry.replay.engine import TargetResult, replay
from carry.series.store import Provenance
from tests.conftest import TOBY, CommitBuilder, git, util

MakeSeries = Callable[..., Any]


def _series(up: CommitBuilder, messages: list[str], edits: list[dict[str, str]]) -> list[str]:
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    shas = [up.commit(m, e, author=TOBY) for m, e in zip(messages, edits, strict=True)]
    up.checkout("main")
    return shas


def _replay(s: Any, up: CommitBuilder) -> TargetResult:
    res = replay(s, Repo.open(up.path), "main")
    assert res.status == "applied", res
    return res


def _status(res: TargetResult) -> list[str]:
    return [p.status for p in res.patches]


def test_patch_id_equal_upstream_commit_drops(upstream: CommitBuilder,
                                              make_series: MakeSeries) -> None:
    _series(upstream, ["One", "Two"], [{"src/util.py": util(h3=33)},
                                       {"src/util.py": util(h3=33, h12=120)}])
    # upstream took patch 1's diff under another message and author, then moved on
    up_sha = upstream.commit("Upstream form of one", {"src/util.py": util(h3=33)})
    upstream.commit("Other", {"README": "moved\n"})
    res = _replay(make_series(upstream, "feature"), upstream)
    assert _status(res) == ["dropped", "applied"]
    assert res.patches[0].reason.startswith(f"patch-id equal to upstream {up_sha[:12]}")
    assert res.patches[0].upstream == up_sha and res.patches[0].commit == ""
    assert git(upstream.path, "show", f"{res.head}:src/util.py") == util(h3=33, h12=120).strip()


def test_change_id_and_link_trailers_drop_edited_upstream_forms(
        upstream: CommitBuilder, make_series: MakeSeries) -> None:
    cid = "I0123456789abcdef0123456789abcdef01234567"
    link = "https://lore.example.org/r/20261203-one@example.com"
    _series(upstream,
            [f"One\n\nChange-Id: {cid}\n", f"Two\n\nLink: {link}\n",
             f"Three\n\nLink: {link}\n"],
            [{"src/util.py": util(h3=33)}, {"src/util.py": util(h3=33, h9=90)},
             {"src/util.py": util(h3=33, h9=90, h15=150)}])
    # upstream applied edited versions (other values, so other patch-ids)
    upstream.commit(f"One, reworded\n\nChange-Id: {cid}\n", {"src/util.py": util(h3=34)})
    upstream.commit(f"Two\n\nLink: {link}\nSigned-off-by: M <m@example.com>\n",
                    {"src/util.py": util(h3=34, h9=91)})
    res = _replay(make_series(upstream, "feature"), upstream)
    assert _status(res) == ["dropped", "dropped", "applied"]
    assert res.patches[0].reason.startswith(f"Change-Id {cid} matches upstream")
    assert res.patches[1].reason.startswith(f"Link {link} and subject match upstream")
    # the same Link on a commit with another subject is not taken for the same patch
    assert res.patches[2].status == "applied"


def test_cherry_pick_trailers_in_both_directions(upstream: CommitBuilder,
                                                 make_series: MakeSeries) -> None:
    git(upstream.path, "checkout", "-q", "-b", "upstream-fix", "base")
    picked = upstream.commit("Upstream fix", {"src/core.py": "def f():\n    return 7\n"})
    git(upstream.path, "checkout", "-q", "main")
    originals = _series(
        upstream,
        [f"Backport fix\n\n(cherry picked from commit {picked})\n", "Own change"],
        [{"src/core.py": "def f():\n    return 7  # backport\n"},
         {"src/util.py": util(h4=44)}])
    # main merges the fix itself, and separately picks our second commit with edits
    git(upstream.path, "merge", "-q", "--no-ff", "-m", "Merge fix", "upstream-fix")
    upstream.commit(f"Own change, picked\n\n(cherry picked from commit {originals[1]})\n",
                    {"src/util.py": util(h4=45)})
    res = _replay(make_series(upstream, "feature"), upstream)
    assert _status(res) == ["dropped", "dropped"]
    assert res.patches[0].reason.startswith(f"cherry-picked from {picked[:12]}")
    assert "upstream cherry-picked the original commit" in res.patches[1].reason


def _provenance(**kw: Any) -> Provenance:
    return Provenance(**{"pr": "vllm-project/vllm#123", "role": "upstream-equivalent", **kw})


def test_provenance_squash_merge_drops_mapped_patches(upstream: CommitBuilder,
                                                      make_series: MakeSeries) -> None:
    _series(upstream, ["Keep state below boundary", "Rename helper", "Follow-up"],
            [{"src/util.py": util(h2=22)}, {"src/util.py": util(h2=22, h6=66)},
             {"src/core.py": "def f():\n    return 3\n"}])
    # upstream's squash of 1-2 has a different diff, and its subject ends with (#123)
    sq = upstream.commit("[BugFix] Retain both replay boundaries (#123)",
                         {"src/util.py": util(h2=23, h6=67)})
    upstream.commit("Unrelated (#124)", {"README": "x\n"})
    s = make_series(upstream, "feature", provenance=[_provenance(patches=[1, 2])])
    res = _replay(s, upstream)
    assert _status(res) == ["dropped", "dropped", "applied"]
    for p in res.patches[:2]:
        assert p.reason.startswith("provenance: vllm-project/vllm#123 (upstream-equivalent) is "
                                   f"squash-merged upstream as {sq[:12]}")
    assert git(upstream.path, "show", f"{res.head}:src/util.py") == util(h2=23, h6=67).strip()


def test_a_pr_number_matches_only_prs_of_the_upstream_repository(
        upstream: CommitBuilder, make_series: MakeSeries) -> None:
    """`(#123)` at the end of an upstream subject names upstream's PR #123, not the fork's:
    provenance for `my-fork/vllm#123` must not drop anything on it."""
    from carry.series.store import Repository

    _series(upstream, ["Keep state below boundary"], [{"src/util.py": util(h2=22)}])
    upstream.commit("[BugFix] Something else entirely (#123)", {"README": "other\n"})
    up = Repository(repo="vllm-project/vllm")
    fork_pr = make_series(upstream, "feature", upstream=up,
                          provenance=[_provenance(pr="my-fork/vllm#123", patches=[1])])
    assert _status(_replay(fork_pr, upstream)) == ["applied"]
    ours = make_series(upstream, "feature", name="demo2", upstream=up,
                       provenance=[_provenance(pr="vllm-project/vllm#123", patches=[1])])
    assert _status(_replay(ours, upstream)) == ["dropped"]


def test_provenance_merge_commit_and_merged_as(upstream: CommitBuilder,
                                               make_series: MakeSeries) -> None:
    _series(upstream, ["A", "B"], [{"src/util.py": util(h1=11)},
                                   {"src/core.py": "def f():\n    return 5\n"}])
    git(upstream.path, "checkout", "-q", "-b", "pr-77", "main")
    upstream.commit("A upstream", {"src/util.py": util(h1=12)})
    git(upstream.path, "checkout", "-q", "main")
    git(upstream.path, "merge", "-q", "--no-ff", "-m",
        "Merge pull request #77 from someone/pr-77\n\nA upstream", "pr-77")
    unmerged = upstream.commit("B elsewhere", {"docs/b.md": "b\n"})
    git(upstream.path, "reset", "-q", "--hard", "HEAD~1")  # that commit is not on main
    s = make_series(upstream, "feature", provenance=[
        _provenance(pr="vllm-project/vllm#77", patches=[1]),
        _provenance(pr="vllm-project/vllm#78", patches=[2], merged_as=unmerged[:10])])
    res = _replay(s, upstream)
    assert _status(res) == ["dropped", "applied"]  # #78's recorded commit is not on main
    assert "is merged upstream as" in res.patches[0].reason
    git(upstream.path, "reset", "-q", "--hard", unmerged)  # now main contains #78's commit
    res = _replay(s, upstream)
    assert res.patches[1].status == "dropped"
    assert res.patches[1].reason.startswith(
        f"provenance: vllm-project/vllm#78 (upstream-equivalent) merged as {unmerged[:12]}")


def test_empty_after_replay_drops(upstream: CommitBuilder, make_series: MakeSeries) -> None:
    _series(upstream, ["Small", "Other"], [{"src/util.py": util(h8=88)},
                                           {"src/core.py": "def f():\n    return 9\n"}])
    # upstream's bigger commit contains patch 1's change: another patch-id, same result
    upstream.commit("Big rework", {"src/util.py": util(h8=88, h18=180), "README": "big\n"})
    res = _replay(make_series(upstream, "feature"), upstream)
    assert _status(res) == ["dropped", "applied"]
    assert res.patches[0].reason == "empty after replay"


def _fast_history(repo: Path, n: int) -> None:
    """Grow main by n small commits in one git fast-import process."""
    tip = git(repo, "rev-parse", "main")
    lines = []
    for i in range(n):
        body = f"upstream commit {i}\n"
        lines += ["commit refs/heads/main",
                  f"committer U <u@example.com> {1_800_000_000 + i} +0000",
                  f"data {len(body)}", body.rstrip("\n"),
                  *([f"from {tip}"] if i == 0 else []),
                  f"M 100644 inline docs/f{i % 50}.txt", f"data {len(body)}", body.rstrip("\n"),
                  ""]
    git(repo, "fast-import", "--quiet", input="\n".join(lines).encode() + b"\n")
    git(repo, "reset", "-q", "--hard", "main")


def test_drop_detection_runs_a_fixed_number_of_git_processes(
        upstream: CommitBuilder, make_series: MakeSeries, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Batched: the count of git processes does not grow with the upstream range."""
    cid = "Iabcdefabcdefabcdefabcdefabcdefabcdefabcd"
    link = "https://lore.example.org/r/two@example.com"
    _series(upstream, ["One", f"Two\n\nChange-Id: {cid}\nLink: {link}\n"],
            [{"src/util.py": util(h3=33)}, {"src/util.py": util(h3=33, h7=77)}])
    s = make_series(upstream, "feature", provenance=[_provenance(patches=[1])])
    base, carried = load_chain(s, Repo.open(upstream.path))
    shim = tmp_path / "shim"
    shim.mkdir()
    log = tmp_path / "git-calls.log"
    real = git(tmp_path, "--exec-path")
    (shim / "git").write_text(f'#!/bin/sh\necho "$1" >> {log}\nexec {real}/git "$@"\n')
    (shim / "git").chmod(0o755)
    path = os.environ["PATH"]
    counts = []
    for size in (30, 300):
        _fast_history(upstream.path, size)
        log.write_text("")
        monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{path}")
        repo = Repo.open(upstream.path)
        drops = find_drops(repo, carried, base, repo.rev_parse("main"),
                                       s.manifest.provenance, remember=False)
        repo.close()
        monkeypatch.setenv("PATH", path)
        assert drops == {}
        counts.append(len(log.read_text().splitlines()))
    assert counts[0] == counts[1] and counts[0] <= 8, counts


def test_remembered_search_only_adds_new_upstream_commits(upstream: CommitBuilder,
                                                          make_series: MakeSeries) -> None:
    cid = "I1111111111111111111111111111111111111111"
    _series(upstream, ["One", f"Two\n\nChange-Id: {cid}\n"],
            [{"src/util.py": util(h3=33)}, {"src/core.py": "def f():\n    return 4\n"}])
    upstream.commit("Unrelated", {"README": "x\n"})
    s = make_series(upstream, "feature")
    repo = Repo.open(upstream.path)
    base, carried = load_chain(s, repo)

    def both() -> tuple[dict[int, str], dict[int, str]]:
        target = repo.rev_parse("main")
        fresh = find_drops(repo, carried, base, target, remember=False)
        kept = find_drops(repo, carried, base, target)
        return ({n: d.reason for n, d in kept.items()}, {n: d.reason for n, d in fresh.items()})

    kept, fresh = both()
    assert kept == fresh == {}
    first = upstream.rev("main")
    upstream.commit("Take one", {"src/util.py": util(h3=33)})  # main moves on: incremental
    kept, fresh = both()
    assert kept == fresh and list(kept) == [1] and kept[1].startswith("patch-id equal")
    upstream.commit(f"Two upstream\n\nChange-Id: {cid}\n", {"src/core.py": "x = 1\n"})
    kept, fresh = both()
    assert kept == fresh and sorted(kept) == [1, 2]
    git(upstream.path, "reset", "-q", "--hard", first)  # main rewound: searched afresh
    kept, fresh = both()
    assert kept == fresh == {}
    assert list((upstream.path / ".git" / "carry" / "search").glob("*.json"))
    # a damaged memory is searched again: never a wrong mark, never a crash
    [kept_file] = (upstream.path / ".git" / "carry" / "search").glob("*.json")
    data = json.loads(kept_file.read_text())
    data["entries"][-1]["marked"] = [c.commit.sha for c in carried]  # "upstream has them all"
    for damaged in (json.dumps(data), "{}", "[]", "not json", json.dumps({"entries": 1})):
        kept_file.write_text(damaged)
        kept, fresh = both()
        assert kept == fresh == {}
