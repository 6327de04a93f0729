"""carry supersede, safe to run unattended: through the CLI and PyGithub's real HTTP to the
GitHub double, with a real bare repository holding each PR's `refs/pull/N/head`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from carry.series import store as seriesmod
from tests import github_server
from tests.conftest import FORK, CommitBuilder, forge_env, git, import_and_apply, run_carry

MARK = "<!-- carry:series=demo -->"
Server = github_server.RunningServer


def _pull(gh: Server, fork: CommitBuilder, number: int, rev: str, body: str = "",
          base: str = "main", user: str = "alice") -> None:
    sha = git(fork.path, "rev-parse", rev)
    git(fork.path, "push", "-q", "origin", f"{sha}:refs/pull/{number}/head")
    gh.state.add_pull(FORK, number, title=f"pr {number}", body=body, head=f"b{number}",
                      head_sha=sha, base=base, user=user, draft=False)


def _seed(gh: Server, fork: CommitBuilder, root: Path) -> None:
    """#9 is carry's PR; the others are each a way an open PR can look like a duplicate."""
    git(fork.path, "checkout", "-q", "-b", "docs", "main")
    docs = fork.commit("docs: typo", {"README": "upstream, fixed\n"})
    git(fork.path, "checkout", "-q", "-b", "mixed", "main")
    fork.commit("core: fix f", {"src/core.py": "def f():\n    return 2\n"})
    mixed = fork.commit("docs: unrelated", {"docs.txt": "x\n"})
    _pull(gh, fork, 9, "carry/demo", MARK + "\nthe consolidated PR", user="carry-bot")
    _pull(gh, fork, 1, "feature", MARK + "\nan older carry PR")
    _pull(gh, fork, 2, docs, "docs")
    _pull(gh, fork, 3, mixed, "one series patch next to unrelated work")
    _pull(gh, fork, 4, docs, f"This quotes `{MARK}` in passing.")
    _pull(gh, fork, 5, "feature", MARK, base="release")
    _pull(gh, fork, 6, "feature", "<!-- carry:series=demo,other -->\nconsolidated twice")
    _pull(gh, fork, 7, "feature~1", "the original", user="tobymao")
    _pull(gh, fork, 8, docs, "same number as a PR elsewhere")
    s = seriesmod.find(root, "demo")
    s.manifest.provenance += [
        seriesmod.Provenance(pr=f"{FORK}#7", role="origin", patches=[1, 2]),
        seriesmod.Provenance(pr="other/repo#8", role="superseded", patches=[1, 2, 3])]
    seriesmod.save_manifest(s)


@pytest.fixture
def seeded(gh: Server, fork: CommitBuilder, series_root: Path) -> dict[str, str]:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    _seed(gh, fork, series_root)
    return env


def _args(fork: CommitBuilder, *extra: str, by: int = 9) -> list[str]:
    return ["supersede", "demo", "--by", str(by), "--forge-repo", FORK, "--repo",
            str(fork.path), "--json", *extra]


def _one(out: dict[str, Any], number: int = 1) -> dict[str, Any]:
    return next(x for x in out["pulls"] if x["number"] == number)


def _writes(gh: Server) -> list[tuple[str, str]]:
    return [r for r in gh.state.requests if r[0] != "GET"]


def test_dry_run_lists_every_open_pr_with_why(gh: Server, fork: CommitBuilder,
                                              seeded: dict[str, str]) -> None:
    r = run_carry(*_args(fork), env=seeded)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    seen = {x["number"]: (x["verdict"], x["why"]) for x in out["pulls"]}
    assert seen == {
        1: ("close", "every commit is in #9"),
        2: ("unrelated", "no carry marker for the series, not in its provenance, no shared "
                         "patch"),
        3: ("keep", "1 of its 2 commit(s) are not in #9"),
        4: ("unrelated", "no carry marker for the series, not in its provenance, no shared "
                         "patch"),
        5: ("keep", "targets release, not main"),
        6: ("keep", "also carries series other"),
        7: ("keep", "provenance role origin: closed only with --include-origin"),
        8: ("unrelated", "no carry marker for the series, not in its provenance, no shared "
                         "patch"),
    }
    assert out["closing"] == [1] and out["dry_run"] and out["by_state"] == "open"
    assert _one(out)["actions"] == ["would comment", "would close"]
    assert _writes(gh) == []
    text = run_carry(*_args(fork)[:-1], env=seeded)
    assert "#4 pr 4 (alice): unrelated:" in text.out
    assert "#3 pr 3 (alice): keep: 1 of its 2 commit(s) are not in #9" in text.out


def test_apply_closes_labels_comments_once_and_records_provenance(
        gh: Server, fork: CommitBuilder, seeded: dict[str, str],
        series_root: Path) -> None:
    s = seriesmod.find(series_root, "demo")
    s.manifest.supersede.label = "superseded"
    seriesmod.save_manifest(s)
    r = run_carry(*_args(fork, "--apply"), env=seeded)
    assert r.code == 0, r.err
    pulls = gh.state.repos[FORK].pulls
    assert sorted(n for n, p in pulls.items() if p.state == "closed") == [1]
    assert pulls[1].labels == ["superseded"]
    (comment,) = gh.state.repos[FORK].comments
    assert comment.issue == 1
    assert comment.body.startswith("Superseded by #9, which targets `main` and is not merged "
                                   "yet.")
    assert "Do not merge or cherry-pick this PR separately." in comment.body
    assert comment.body.endswith("<!-- carry:superseded-by=9 -->")
    out = json.loads(r.out)
    assert _one(out)["actions"] == ["commented", "labelled superseded", "closed"]
    assert out["provenance"] == [
        f"{FORK}#1: role superseded, state closed, superseded_by {FORK}#9",
        f"{FORK}#9: role consolidated, state open"]
    prov = {p.pr: p for p in seriesmod.find(series_root, "demo").manifest.provenance}
    assert (prov[f"{FORK}#1"].state, prov[f"{FORK}#1"].superseded_by) == ("closed",
                                                                          f"{FORK}#9")
    pulls[1].state = "open"  # somebody reopened it: close again, never comment twice
    again = run_carry(*_args(fork, "--apply"), env=seeded)
    assert again.code == 0, again.err
    assert _one(json.loads(again.out))["actions"][0] == "comment already posted"
    assert len(gh.state.repos[FORK].comments) == 1 and pulls[1].state == "closed"


def test_include_origin_closes_the_origin_pr_too(gh: Server, fork: CommitBuilder,
                                                 seeded: dict[str, str]) -> None:
    r = run_carry(*_args(fork, "--apply", "--include-origin"), env=seeded)
    assert r.code == 0, r.err
    closed = sorted(n for n, p in gh.state.repos[FORK].pulls.items() if p.state == "closed")
    assert closed == [1, 7]


@pytest.mark.parametrize(("by", "extra", "rule"), [
    (2, (), "#2 does not carry series demo: its body does not start with carry's marker"),
    (4, (), "#4 does not carry series demo"),
    (10, (), "#10 is closed without being merged: a closed PR supersedes nothing"),
    (7, (), "#7 is recorded as origin in the manifest of demo: it cannot supersede"),
    (1, (), "#1 is recorded as superseded in the manifest of demo: it cannot supersede"),
    (9, ("--base", "release"), "#9 targets main, not --base release"),
])
def test_by_must_be_an_open_or_merged_carry_pr(by: int, extra: tuple[str, ...], rule: str,
                                               gh: Server, fork: CommitBuilder,
                                               seeded: dict[str, str],
                                               series_root: Path) -> None:
    gh.state.add_pull(FORK, 10, title="closed", body=MARK, head="x", head_sha="1" * 40,
                      base="main", user="bob", draft=False, state="closed")
    s = seriesmod.find(series_root, "demo")  # #1 is carry's, like #643 it was superseded
    s.manifest.provenance.append(seriesmod.Provenance(pr=f"{FORK}#1", role="superseded"))
    seriesmod.save_manifest(s)
    r = run_carry(*[a for a in _args(fork, "--apply", *extra, by=by) if a != "--json"],
                  env=seeded)
    assert r.code == 2
    assert len(r.err.strip().splitlines()) == 1
    assert r.err.startswith(f"carry: error: {rule}"), r.err
    assert _writes(gh) == []


def test_when_merged_waits_then_comments_with_the_merge(gh: Server,
                                                        fork: CommitBuilder,
                                                        seeded: dict[str, str]) -> None:
    r = run_carry(*_args(fork, "--apply", "--when-merged"), env=seeded)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["waiting"] == "#9 is not merged yet: nothing is closed until it is"
    assert out["dry_run"] and _writes(gh) == []
    nine = gh.state.repos[FORK].pulls[9]
    nine.state, nine.merged, nine.merge_sha = "closed", True, "86acae98f0" + "1" * 30
    r = run_carry(*_args(fork, "--apply", "--when-merged"), env=seeded)
    assert r.code == 0, r.err
    assert json.loads(r.out)["closing"] == [1]
    (comment,) = gh.state.repos[FORK].comments
    assert comment.body.startswith("Superseded by #9, now merged on `main` as `86acae98f0`.")


def test_three_runs_at_once_leave_one_comment(gh: Server, fork: CommitBuilder,
                                              seeded: dict[str, str]) -> None:
    env = dict(os.environ, **seeded)
    procs = [subprocess.Popen([sys.executable, "-m", "carry", *_args(fork, "--apply")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(3)]
    for p in procs:
        _, err = p.communicate()
        assert p.returncode == 0, err
    assert [c.issue for c in gh.state.repos[FORK].comments] == [1]


def test_a_run_on_another_machine_first_leaves_its_comment_only(
        gh: Server, fork: CommitBuilder, seeded: dict[str, str]) -> None:
    def other_machine(full: str, number: int, body: str) -> None:
        gh.state.before_comment = None
        gh.state.add_comment(full, number, body, "carry-bot")  # it posted just before us

    gh.state.before_comment = other_machine
    r = run_carry(*_args(fork, "--apply"), env=seeded)
    assert r.code == 0, r.err
    (kept,) = gh.state.repos[FORK].comments
    assert kept.id == min(c.id for c in gh.state.repos[FORK].comments)
    assert ("DELETE", f"/repos/{FORK}/issues/comments/{kept.id + 1}") in gh.state.requests
    assert _one(json.loads(r.out))["actions"][0] == (
        "comment already posted by another run; deleted the duplicate")


def test_without_a_clone_only_provenance_patches_prove_containment(
        gh: Server, fork: CommitBuilder, seeded: dict[str, str], series_root: Path) -> None:
    s = seriesmod.find(series_root, "demo")
    s.manifest.provenance.append(seriesmod.Provenance(pr=f"{FORK}#2", role="superseded",
                                                      patches=[1, 2, 3]))
    seriesmod.save_manifest(s)
    r = run_carry("supersede", "demo", "--by", "9", "--forge-repo", FORK, "--json", env=seeded)
    assert r.code == 0, r.err
    seen = {x["number"]: (x["verdict"], x["why"]) for x in json.loads(r.out)["pulls"]}
    assert seen[1] == ("keep", "cannot show its commits are in #9: pass --repo to compare them "
                               "by patch-id")
    assert seen[2] == ("close", "every commit is in #9")
    assert seen[3][0] == "unrelated" and seen[3][1].endswith("(patches not compared: no --repo)")
