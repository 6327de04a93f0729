"""Why a patch conflicts: an upstream of 50 commits of which exactly one makes each root conflict;
the stop names that commit and its PR, a dependent patch names the patch it builds on, root
conflicts come first, in text, --json, `carry status`, the CI summary and the tracking issue.
All real git; the tracking issue goes to the GitHub double on 127.0.0.1."""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from carry.git import Repo
from carry.replay import why
from carry.replay.engine import replay
from carry.series import store as seriesmod
from carry.series.store import Repository, Target
from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, run_carry, util

MakeSeries = Callable[..., Any]
TOKEN = "ghp_why_secret_value_1122334455"
FORK = "lab/fork"
OTHERS = ("h6", "h7", "h8", "h9", "h10", "h11", "h12", "h13", "h17", "h18", "h19")


@dataclass
class Fifty:
    up: CommitBuilder
    root: Path
    causes: dict[str, str]  # the upstream commit each root conflict comes from
    files: list[str]  # the four patch files

    def carry(self, *args: str, env: dict[str, str] | None = None) -> Any:
        return run_carry(*args, "--repo", str(self.up.path), "--series-dir", str(self.root),
                         env=env)


@pytest.fixture
def fifty(upstream: CommitBuilder, make_series: MakeSeries, series_root: Path) -> Fifty:
    """Four patches: 0001 retunes h3 (a root conflict), 0002 touches another file, 0003
    changes the line 0001 wrote (it builds on 0001), 0004 retunes h15 (a second root).
    Upstream main then gets 50 commits: #1020 retunes h3 and #1035 reworks h15 (the two
    causes), #1042 touches h3 again later (so the line is not "first touch"), and the others
    change other functions of the same file (most of them) or other files."""
    up = upstream
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("Tune h3\n\nSigned-off-by: Toby Mao <toby@example.com>\n",
              {"src/util.py": util(h3=33)}, author=TOBY)
    up.commit("Core returns 2", {"src/core.py": "def f():\n    return 2\n"}, author=TOBY)
    up.commit("Tune h3 again", {"src/util.py": util(h3=333)}, author=LOGPROBZ)
    up.commit("Tune h15", {"src/util.py": util(h3=333, h15=155)}, author=LOGPROBZ)
    up.checkout("main")
    state: dict[str, int] = {}
    causes = {}
    for i in range(1, 51):
        if i in (20, 35, 42):
            key, value, subject = {20: ("h3", 30, "Retune h3"), 35: ("h15", 150, "Rework h15"),
                                   42: ("h3", 300, "Retune h3 once more")}[i]
            state[key] = value
            sha = up.commit(f"{subject} (#{1000 + i})", {"src/util.py": util(**state)})
            causes.setdefault(key, sha)
        elif i % 5:  # most commits change other functions of the same file
            state[OTHERS[i % len(OTHERS)]] = 1000 + i
            up.commit(f"Tweak another helper (#{1000 + i})", {"src/util.py": util(**state)})
        else:
            up.commit(f"Docs page {i} (#{1000 + i})", {f"docs/page{i}.md": f"page {i}\n"})
    s = make_series(up, "feature", targets=[Target(name="main", ref="main")],
                    fork=Repository(repo=FORK, remote="origin", branch="main"))
    return Fifty(up, series_root, {"0001": causes["h3"], "0004": causes["h15"]},
                 [p.name for p in s.patches()])


def test_the_stop_names_the_upstream_commit_and_the_patch_a_conflict_builds_on(
        fifty: Fifty) -> None:
    one, _, three, four = fifty.files
    dry = fifty.carry("rebase", "demo", "--onto", "main", "--dry-run", "--json")
    assert dry.code == 1, dry.err
    (r,) = json.loads(dry.out)
    p = {x["file"]: x for x in r["patches"]}
    assert p[one]["cause"] == {"sha": fifty.causes["0001"], "subject": "Retune h3 (#1020)",
                               "pr": 1020}
    assert p[four]["cause"] == {"sha": fifty.causes["0004"], "subject": "Rework h15 (#1035)",
                                "pr": 1035}
    assert (p[three]["cause"], p[three]["builds_on"]) == (None, one)
    assert p[one]["builds_on"] == p[four]["builds_on"] == ""
    assert [w["file"] for w in r["why"]] == [one, four, three]
    assert [w["status"] for w in r["why"]] == ["conflict", "would-conflict", "would-conflict"]

    verbose = fifty.carry("rebase", "demo", "--onto", "main", "--dry-run", "-v")
    res = fifty.carry("rebase", "demo", "--onto", "main")
    assert res.code == 1, res.err
    lines = res.out.splitlines()
    want = [f"why: 0001 conflicts since upstream {fifty.causes['0001'][:12]} "
            "'Retune h3 (#1020)'",
            f"0004 would conflict since upstream {fifty.causes['0004'][:12]} "
            "'Rework h15 (#1035)'",
            "0003 would conflict too: builds on 0001, which conflicts"]
    at = [next(i for i, line in enumerate(lines) if line.strip() == w) for w in want]
    assert at == sorted(at)  # root conflicts first, then the one that builds on a root
    full = [ln.strip() for ln in verbose.out.splitlines()]
    want = ["main: " + w.removeprefix("why: ").replace("would conflict too: ", "") for w in want]
    assert [full.index(w) for w in want] == sorted(full.index(w) for w in want)  # as before


def test_after_skip_the_dependent_patch_names_the_skipped_one_and_status_shows_why(
        fifty: Fifty) -> None:
    assert fifty.carry("rebase", "demo", "--onto", "main").code == 1
    res = fifty.carry("rebase", "--skip")
    assert res.code == 1, res.err
    assert "CONFLICT in 0003-" in res.out
    root = res.out.index(f"  0004 would conflict since upstream "
                         f"{fifty.causes['0004'][:12]} 'Rework h15 (#1035)'")
    dep = res.out.index("  why: 0003 builds on 0001, which was skipped")
    assert dep < root  # the stop and its why first, then what lies beyond it

    status = fifty.carry("status", "demo")
    assert status.code == 0, status.err
    assert "    why: 0004 would conflict since upstream" in status.out
    assert status.out.index("why: 0004") < status.out.index(
        "why: 0003 builds on 0001, which was skipped")
    data = json.loads(fifty.carry("status", "demo", "--json").out)
    (stopped,) = data["series"][0]["stopped"]
    assert stopped["why"][1] == "0003 builds on 0001, which was skipped"

    # --continue with 0003 resolved: its forecast is replayed for real, 0004 still conflicts
    # with the same cause, and nothing stale is left on 0003.
    assert fifty.carry("rebase", "--resolve").code == 1  # the worktree, asked for
    wt = Path(json.loads((fifty.up.path / ".git/carry/rebase/demo/main.json").read_text())
              ["worktree"])
    (wt / "src" / "util.py").write_text(_resolved(wt))
    git(wt, "add", "src/util.py")
    res = fifty.carry("rebase", "--continue")
    assert res.code == 1 and "CONFLICT in 0004-" in res.out, res.out + res.err
    assert f"  why: 0004 conflicts since upstream {fifty.causes['0004'][:12]}" in res.out
    state = json.loads((fifty.up.path / ".git/carry/rebase/demo/main.json").read_text())
    three = state["patches"][2]
    assert three["status"] == "applied" and three["builds_on"] == "0001-Tune-h3.patch"


def test_a_forecast_conflict_that_applies_after_continue_keeps_no_why(fifty: Fifty) -> None:
    assert fifty.carry("rebase", "demo", "--onto", "main").code == 1
    state_file = fifty.up.path / ".git/carry/rebase/demo/main.json"
    assert fifty.carry("rebase", "--resolve").code == 1  # the worktree, asked for
    wt = Path(json.loads(state_file.read_text())["worktree"])
    (wt / "src" / "util.py").write_text(_resolved(wt))  # 0001 keeps its h3 = 33
    git(wt, "add", "src/util.py")
    res = fifty.carry("rebase", "--continue")
    assert res.code == 1 and "CONFLICT in 0004-" in res.out, res.out + res.err
    assert "builds on" not in res.out  # 0003 applied on 0001's resolved lines
    three = json.loads(state_file.read_text())["patches"][2]
    assert (three["status"], three["cause"], three["builds_on"]) == ("applied", None, "")


def _resolved(wt: Path) -> str:
    """The conflicted util.py with every conflict taken as the patch's lines."""
    out, keep = [], True
    for line in (wt / "src" / "util.py").read_text().splitlines(keepends=True):
        if line.startswith(("<<<<<<<", "|||||||")):
            keep = False
        elif line.startswith("======="):
            keep = True
        elif not line.startswith(">>>>>>>") and keep:
            out.append(line)
    return "".join(out)


def test_bisection_costs_about_log2_n_merges_and_a_rerun_none(
        fifty: Fifty, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Counted, not timed: every merge carry runs is traced by $CARRY_TRACE_MERGES."""
    s = seriesmod.find(fifty.root, "demo")
    repo = Repo.open(fifty.up.path)
    trace = tmp_path / "merges.txt"
    kept = fifty.up.path / ".git" / "carry" / "why"
    try:
        steps = replay(s, repo, "main").patches
        assert [x.status for x in steps] == ["conflict", "pending", "would-conflict",
                                             "would-conflict"]
        # the replay's forecast kept what each conflict builds on (whatever the target: 3)
        # and each root's cause on this target (2)
        assert len(list(kept.iterdir())) == 5
        shutil.rmtree(kept)
        monkeypatch.setenv("CARRY_TRACE_MERGES", str(trace))
        why.annotate(repo, steps, fifty.up.rev("main"))
        merges = len(trace.read_text().splitlines())
        # two roots: the bisection over the commits that touch src/util.py (most of the
        # 50) and the check at the target, at most two merges a probe; 0003 takes 0001 out
        # and tries (1), 0004 takes 0003 and 0001 out and tries after each (2)
        touching = int(git(fifty.up.path, "rev-list", "--count", "base..main", "--",
                           "src/util.py"))
        assert touching > 35
        probes = math.ceil(math.log2(touching + 1)) + 1
        assert 0 < merges <= 2 * 2 * probes + 1 + 2, merges
        assert steps[0].cause and steps[0].cause["sha"] == fifty.causes["0001"]
        first = [(x.cause, x.builds_on) for x in steps]

        trace.unlink()
        why.annotate(repo, steps, fifty.up.rev("main"))  # asked again: from .git/carry/why
        assert not trace.exists()
        assert [(x.cause, x.builds_on) for x in steps] == first
        for entry in kept.iterdir():  # a damaged entry is worked out again
            entry.write_bytes(entry.read_bytes().replace(b"1020", b"1021"))
        why.annotate(repo, steps, fifty.up.rev("main"))
        assert trace.exists() and [(x.cause, x.builds_on) for x in steps] == first
    finally:
        repo.close()


def _one_by_one(self: Repo, asks: list[Any], known: Any = None) -> list[bool | None]:
    """`clean_merges` telling nothing: every merge then runs on its own, in the order a
    patch asks it, as the whys were worked out before they were asked together."""
    return [None] * len(asks)


@pytest.mark.parametrize("flips", [(), (12, 24), (6, 16, 26, 34)])
def test_whys_asked_together_are_those_asked_one_by_one(
        fifty: Fifty, monkeypatch: pytest.MonkeyPatch, flips: tuple[int, ...]) -> None:
    """The forecast's whys (every conflict's merges decided together a round at a time, some
    asked ahead) against the same whys with each merge asked alone. `flips`: upstream
    commits that undo and redo h3's retune after the fixture's, so that P's line does not
    conflict from one commit on and the bisection's path decides which transition it names."""
    up, h3 = fifty.up, 30
    up.checkout("main")
    for i in flips:
        h3 = 3 if h3 != 3 else 30 + i  # 3: as the base has it, where 0001 applies
        up.commit(f"Flip h3 {i} (#{2000 + i})", {"src/util.py": util(h3=h3, h15=150)})
    s = seriesmod.find(fifty.root, "demo")
    repo = Repo.open(up.path)
    try:
        steps = replay(s, repo, "main").patches
        together = [(x.cause, x.builds_on, x.look) for x in steps]
        assert steps[2].builds_on and steps[0].cause and steps[3].cause
        shutil.rmtree(up.path / ".git" / "carry" / "why")
        monkeypatch.setattr(Repo, "clean_merges", _one_by_one)
        why.annotate(repo, steps, up.rev("main"))
        assert [(x.cause, x.builds_on, x.look) for x in steps] == together
    finally:
        repo.close()


def test_the_earlier_patch_named_is_the_nearest_one_p_needs_when_asked_in_groups(
        upstream: CommitBuilder, make_series: MakeSeries, series_root: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """0004 sets h9 that 0002 set; 0003 (nearest) and 0001 share its file, not its line. Taken
    out nearest first, 0003 leaves 0004 applying, 0002 not, and 0001 with them not either:
    the second and third are asked in one group, and the first of them to fail is named."""
    up = upstream
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("Tune h3", {"src/util.py": util(h3=33)})
    up.commit("Tune h9", {"src/util.py": util(h3=33, h9=99)})
    up.commit("Tune h3 again", {"src/util.py": util(h3=333, h9=99)})
    up.commit("Tune h9 again", {"src/util.py": util(h3=333, h9=999)})
    up.checkout("main")
    up.commit("Retune h3 (#1)", {"src/util.py": util(h3=30)})
    up.commit("Retune h9 (#2)", {"src/util.py": util(h3=30, h9=90)})
    s = make_series(up, "feature", targets=[Target(name="main", ref="main")])
    files = [p.name for p in s.patches()]
    repo = Repo.open(up.path)
    try:
        steps = replay(seriesmod.find(series_root, "demo"), repo, "main").patches
        assert [x.builds_on for x in steps] == ["", "", files[0], files[1]]
        shutil.rmtree(up.path / ".git" / "carry" / "why")
        monkeypatch.setattr(Repo, "clean_merges", _one_by_one)
        why.annotate(repo, steps, up.rev("main"))
        assert [x.builds_on for x in steps] == ["", "", files[0], files[1]]
    finally:
        repo.close()


def test_ci_summary_and_tracking_issue_say_why_roots_first(fifty: Fifty, tmp_path: Path) -> None:
    from tests import github_server

    gh = github_server.start(TOKEN)
    try:
        gh.state.repo(FORK)
        env = {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": gh.url}
        res = run_carry("ci", "run", "demo", "main", "--ref", "main", "--repo",
                        str(fifty.up.path), "--engine", "local", "--ledger",
                        str(tmp_path / "ledger.json"), "--out", str(tmp_path / "out"),
                        "--track-issues", "--series-dir", str(fifty.root), "--json", env=env)
        assert res.code == 1, res.out + res.err
        assert TOKEN not in res.out + res.err
        (row,) = json.loads(res.out)["rows"]
        assert [w["file"][:4] for w in row["why"]] == ["0001", "0004", "0003"]
        summary = (tmp_path / "out" / "summary.md").read_text()
        root = f"<br>why: 0001 conflicts since upstream {fifty.causes['0001'][:12]} "
        assert root + "'Retune h3 (#1020)'" in summary
        assert summary.index(root) < summary.index("<br>why: 0004 would conflict") < \
            summary.index("<br>why: 0003 builds on 0001, which conflicts")
        (issue,) = gh.state.repos[FORK].issues.values()
        body = issue.body
        assert "## Why" in body
        assert f"- 0001 conflicts since upstream {fifty.causes['0001'][:12]} " \
               "'Retune h3 (#1020)'" in body
        assert body.index("- 0004 would conflict") < body.index("- 0003 builds on 0001")
    finally:
        gh.stop()


def test_pr_number_from_squash_and_merge_subjects() -> None:
    assert why.pr_number("[Core] Rename foo (#1234)") == 1234
    assert why.pr_number("Merge pull request #77 from a/b") == 77
    assert why.pr_number("Fix (#12) in the middle") is None
    assert why.pr_number("No number") is None


def test_a_damaged_why_in_the_saved_state_is_refused_in_one_line(fifty: Fifty) -> None:
    assert fifty.carry("rebase", "demo", "--onto", "main").code == 1
    path = fifty.up.path / ".git/carry/rebase/demo/main.json"
    state = json.loads(path.read_text())
    older = json.loads(path.read_text())
    for p in older["patches"]:  # a state written before these fields existed still reads
        del p["cause"], p["builds_on"]
    path.write_text(json.dumps(older))
    assert fifty.carry("status", "demo").code == 0
    state["patches"][0]["cause"] = {"sha": "zz", "subject": 1, "pr": "x"}
    path.write_text(json.dumps(state))
    res = fifty.carry("rebase", "--skip")
    assert res.code == 2 and "Traceback" not in res.err
    assert "cause or builds_on" in res.err and len(res.err.strip().splitlines()) <= 2


@pytest.mark.parametrize("tail", ["(#" + "7" * 5000 + ")", "(#\u0661\u0662)", "(#\u00b2)"])
def test_an_upstream_subject_with_a_number_carry_cannot_read_names_no_pr(
        upstream: CommitBuilder, make_series: MakeSeries, series_root: Path, tail: str) -> None:
    """The cause's subject is upstream's text: `(#<5,000 digits>)` is past int()'s limit and
    Arabic-Indic or superscript digits are no PR number; the stop still names the commit."""
    up = upstream
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("Tune h3", {"src/util.py": util(h3=33)}, author=TOBY)
    up.checkout("main")
    sha = up.commit(f"Retune h3 {tail}", {"src/util.py": util(h3=30)})
    make_series(up, "feature", targets=[Target(name="main", ref="main")])
    res = run_carry("rebase", "demo", "--onto", "main", "--dry-run", "--json", "--repo",
                    str(up.path), "--series-dir", str(series_root))
    assert res.code == 1 and "Traceback" not in res.err, res.err
    (r,) = json.loads(res.out)
    assert r["patches"][0]["cause"] == {"sha": sha, "subject": f"Retune h3 {tail}", "pr": None}


def test_a_fork_branch_target_calls_its_commits_by_the_target_not_upstream(
        fifty: Fifty) -> None:
    """The same history as a branch of the fork's remote (`origin/dev`): the cause is a
    commit of that branch, which the line names by the target, never as upstream's."""
    git(fifty.up.path, "update-ref", "refs/remotes/origin/dev", "main")
    res = fifty.carry("rebase", "demo", "--onto", "origin/dev", "--dry-run", "-v")
    assert res.code == 1, res.err
    want = (f"origin/dev: 0001 conflicts since origin/dev commit "
            f"{fifty.causes['0001'][:12]} 'Retune h3 (#1020)'")
    assert want in [line.strip() for line in res.out.splitlines()]
    assert "upstream" not in "".join(line for line in res.out.splitlines() if "0001" in line)
    dry = fifty.carry("rebase", "demo", "--onto", "main", "--dry-run", "-v")  # upstream's
    assert f"0001 conflicts since upstream {fifty.causes['0001'][:12]}" in dry.out


def test_a_root_no_single_commit_explains_says_which_git_log_to_read(
        upstream: CommitBuilder, make_series: MakeSeries) -> None:
    """The series base is a fork commit off upstream's line that changed h3; the patch
    changes that h3 again, so it conflicts already at the merge-base (before any upstream
    commit): no single commit explains it, and the line gives the exact `git log` of the
    commits that change the patch's file since the merge-base."""
    up = upstream
    mb = up.rev("base")
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "forkbase")
    up.commit("Fork tunes h3", {"src/util.py": util(h3=7)}, author=TOBY)
    up.tag("forkbase")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("Tune h3 on the fork", {"src/util.py": util(h3=8)}, author=TOBY)
    up.checkout("main")
    up.commit("Docs (#7)", {"docs/a.md": "a\n"})
    up.commit("Tweak h5 (#8)", {"src/util.py": util(h5=55)})
    make_series(up, "feature", base="forkbase", targets=[Target(name="main", ref="main")])
    res = run_carry("rebase", "demo", "--onto", "main", "--dry-run", "-v", "--repo",
                    str(up.path), "--series-dir", str(up.path.parent / "series"))
    assert res.code == 1, res.err
    look = f"git log --oneline --first-parent {mb[:12]}..{up.rev('main')[:12]} -- src/util.py"
    want = f"main: 0001 conflicts; no single upstream commit explains it: read the commits " \
           f"that change its files, {look}"
    assert want in [line.strip() for line in res.out.splitlines()], res.out
    listed = git(up.path, "log", "--oneline", "--first-parent", f"{mb}..main", "--",
                 "src/util.py")
    assert "Tweak h5 (#8)" in listed and "Docs" not in listed


def test_graft_commits_are_dated_after_any_real_commit() -> None:
    """git finds a merge's base walking newest first: a graft dated 1970 was reached after
    the other side's whole history (0.3 s a merge on the 16,000-commit vLLM fork). Dated
    in 2100, it is reached first. A date, not a time, is what is checked."""
    from carry.git import GRAFT_IDENT

    assert int(GRAFT_IDENT.date.split()[0]) > time.time() + 50 * 365 * 86400


def test_a_root_is_bisected_at_the_paths_it_conflicts_on(
        upstream: CommitBuilder, make_series: MakeSeries) -> None:
    """0001 changes util.py and core.py. Upstream #2001 changes core.py so that 0001 would
    conflict there, #2002 puts core.py back, #2003 retunes h3 under 0001's util.py edit.
    At the target 0001 conflicts in util.py alone: its cause is #2003, the commit that
    changed those lines, not #2001 (the first commit at which all of 0001 conflicted)."""
    up = upstream
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("Tune h3, core returns 2", {"src/util.py": util(h3=33),
                                          "src/core.py": "def f():\n    return 2\n"},
              author=TOBY)
    up.checkout("main")
    up.commit("Core returns 5 (#2001)", {"src/core.py": "def f():\n    return 5\n"})
    up.commit("Core returns 1 again (#2002)", {"src/core.py": "def f():\n    return 1\n"})
    cause = up.commit("Retune h3 (#2003)", {"src/util.py": util(h3=30)})
    for i in range(4):
        up.commit(f"Docs {i} (#{2010 + i})", {f"docs/{i}.md": f"{i}\n"})
    make_series(up, "feature", targets=[Target(name="main", ref="main")])
    res = run_carry("rebase", "demo", "--onto", "main", "--dry-run", "--json", "--repo",
                    str(up.path), "--series-dir", str(up.path.parent / "series"))
    assert res.code == 1, res.err
    (r,) = json.loads(res.out)
    (p,) = r["patches"]
    assert p["status"] == "conflict"
    assert p["cause"] == {"sha": cause, "subject": "Retune h3 (#2003)", "pr": 2003}


def test_a_conflict_added_while_others_are_worked_out_joins_their_next_merge(
        fifty: Fifty, monkeypatch: pytest.MonkeyPatch) -> None:
    """The forecast finds 0004 while 0001's why is being bisected (added here from within
    0001's first round, as the forecast's thread would): 0004's merges join 0001's next
    rounds (one `merge-tree` each, not rounds of its own) and both answers are those asked
    one by one."""
    s = seriesmod.find(fifty.root, "demo")
    repo = Repo.open(fifty.up.path)
    onto = fifty.up.rev("main")
    rounds: list[int] = []
    asked = Repo.clean_merges
    try:
        steps = replay(s, repo, "main").patches
        want = [(x.cause, x.builds_on) for x in steps]
        assert steps[0].cause and steps[3].cause
        for alone in (0, 3):  # each alone, for the rounds it takes
            shutil.rmtree(fifty.up.path / ".git" / "carry" / "why")
            monkeypatch.setattr(Repo, "clean_merges",
                                lambda self, asks, known=None: (rounds.append(len(asks)),
                                                                asked(self, asks, known))[1])
            w = why.Why(repo, steps, onto, background=False)
            w.add(alone, steps[alone].forecast)
            w.finish()
        apart = len(rounds)
        for x in steps:
            x.cause, x.builds_on = None, ""
        shutil.rmtree(fifty.up.path / ".git" / "carry" / "why")
        rounds.clear()
        w = why.Why(repo, steps, onto, background=False)

        def first_round_finds_0004(self: Repo, asks: Any, known: Any = None) -> Any:
            if not rounds:
                w.add(3, steps[3].forecast)
            rounds.append(len(asks))
            return asked(self, asks, known)

        monkeypatch.setattr(Repo, "clean_merges", first_round_finds_0004)
        w.add(0, ())
        w.finish()
        assert [(steps[i].cause, steps[i].builds_on) for i in (0, 3)] == [want[0], want[3]]
        assert len(rounds) < apart, (rounds, apart)
        assert max(rounds) > 1  # a round held both patches' merges
    finally:
        repo.close()
