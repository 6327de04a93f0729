"""carry rebase on real repositories: clean replays across drift, exact identities, one ref
update, targets from the manifest, several targets at once, --refresh and the CLI contract."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from carry.base.errors import CarryError
from carry.git import Repo
from carry.rebase import command as rebase
from carry.replay.chain import load_chain
from carry.replay.engine import replay
from carry.series import store as seriesmod
from carry.series.store import Target
from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, run_carry

MakeSeries = Callable[..., Any]

UTIL = "".join(f"def h{i}():\n    return {i}\n\n" for i in range(20))
ODD_MESSAGE = (
    b"[BugFix] Keep a state below each boundary  \n\n"
    b"The body quotes a diff:\n---\ndiff --git a/x b/x\n\n"
    b"Assisted-by: OpenAI Codex\n"
    b"Signed-off-by: logprobz <logprobz@example.com>\n"
)


def _feature(up: CommitBuilder) -> list[str]:
    """Three patches on `base`: an edit in util.py, a new file, an edit in core.py."""
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    shas = [
        up.commit("Tune h5\n\nSigned-off-by: Toby Mao <toby@example.com>\n",
                  {"src/util.py": UTIL.replace("return 5\n", "return 55\n")}, author=TOBY,
                  date="@1790001234 -0730"),
        up.commit(ODD_MESSAGE, {"src/new.py": "NEW = 1\n"}, author=LOGPROBZ),
        up.commit("Zoë's fix to f\n", {"src/core.py": "def f():\n    return 2\n"},
                  author=("Zoë Ünïcode", "zoe@example.com")),
    ]
    up.checkout("main")
    return shas


def _drift(up: CommitBuilder) -> None:
    """Upstream moves: context above the patched lines grows, another region changes."""
    up.commit("Document util", {"src/util.py": '"""Helpers."""\n\nimport os\n\n' + UTIL})
    up.commit("Tune h15", {"src/util.py": '"""Helpers."""\n\nimport os\n\n'
                           + UTIL.replace("return 15\n", "return 150\n")})
    up.commit("Unrelated", {"docs/x.md": "x\n"})


def _refs(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(tuple(line.split(" ", 1)) for line in out.splitlines())  # type: ignore[misc]


def test_clean_rebase_across_drift_keeps_authors_dates_messages(
        upstream: CommitBuilder, make_series: MakeSeries) -> None:
    originals = _feature(upstream)
    _drift(upstream)
    s = make_series(upstream, "feature")
    before = _refs(upstream.path)
    [res] = rebase.run(s, Repo.open(upstream.path), rebase.Options(onto=["main"]))
    assert res.status == "applied" and res.updated
    assert [p.status for p in res.patches] == ["applied"] * 3
    repo = Repo.open(upstream.path)
    assert repo.read_commit(res.head).parents  # a real chain on main
    assert git(upstream.path, "rev-list", "--count", f"main..{res.branch}") == "3"
    assert git(upstream.path, "merge-base", "main", res.branch) == upstream.rev("main")
    util = git(upstream.path, "show", f"{res.branch}:src/util.py")
    assert "return 55" in util and "return 150" in util and util.startswith('"""Helpers')
    for original, p in zip(originals, res.patches, strict=True):
        old, new = repo.read_commit(original), repo.read_commit(p.commit)
        assert new.author == old.author  # name, email and date with its zone
        assert new.message == old.message  # byte-exact, trailing spaces and quoted diff too
        assert (new.committer.name, new.committer.email) == ("C O Mitter",
                                                             "committer@example.com")
    # exactly one user-visible ref changed, in one update
    after = _refs(upstream.path)
    changed = {r for r in after if after[r] != before.get(r)}
    assert {r for r in changed if not r.startswith("refs/carry/cache/")} == {res.branch}
    assert len(git(upstream.path, "reflog", "show", res.branch).splitlines()) == 1
    assert res.branch == "refs/heads/carry/demo/main"


def test_replay_writes_no_ref_and_reports(upstream: CommitBuilder,
                                          make_series: MakeSeries) -> None:
    _feature(upstream)
    _drift(upstream)
    s = make_series(upstream, "feature")
    repo = Repo.open(upstream.path)
    load_chain(s, repo)  # warm the cache so that nothing else may change
    before = _refs(upstream.path)
    res = replay(s, repo, "main")
    assert res.status == "applied" and res.onto == upstream.rev("main")
    assert len(res.head) == 40 and git(upstream.path, "cat-file", "-t", res.head) == "commit"
    assert [p.file for p in res.patches] == [f.name for f in s.patches()]
    assert _refs(upstream.path) == before


def test_cache_is_reused_and_rebuilt_when_patches_change(upstream: CommitBuilder,
                                                         make_series: MakeSeries) -> None:
    _feature(upstream)
    s = make_series(upstream, "feature")
    repo = Repo.open(upstream.path)
    _, first = load_chain(s, repo)
    _, again = load_chain(s, repo)
    assert [c.commit.sha for c in first] == [c.commit.sha for c in again]
    caches = git(upstream.path, "for-each-ref", "refs/carry/cache/").splitlines()
    assert len(caches) == 1
    # a chain that a gc or a user damaged is rebuilt, not trusted
    ref = caches[0].split()[-1]
    git(upstream.path, "update-ref", ref, upstream.rev("base"))
    _, rebuilt = load_chain(s, repo)
    assert [c.commit.sha for c in rebuilt] == [c.commit.sha for c in first]


def test_several_targets_in_parallel_table_and_json(upstream: CommitBuilder,
                                                    make_series: MakeSeries,
                                                    series_root: Path) -> None:
    _feature(upstream)
    upstream.tag("v0.9.0")
    _drift(upstream)
    upstream.tag("v0.10.0")
    upstream.tag("v0.10.0rc1", "HEAD~1")
    upstream.commit("Later", {"docs/y.md": "y\n"})
    targets = [Target("upstream-main", ref="main", kind="main"),
               Target("upstream-release", tags="v*", latest=2, kind="release")]
    make_series(upstream, "feature", targets=targets)
    res = run_carry("rebase", "demo", "--repo", str(upstream.path), "--series-dir",
                    str(series_root), "--json")
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert [d["target"] for d in data] == ["upstream-main", "upstream-release@v0.10.0",
                                           "upstream-release@v0.9.0"]
    for d in data:
        assert set(d) >= {"series", "target", "status", "head", "patches"}
        assert d["status"] == "applied" and d["series"] == "demo"
        assert {"file", "subject", "author", "status", "reason", "commit"} <= set(d["patches"][0])
        assert git(upstream.path, "rev-parse", d["branch"]) == d["head"]
    assert data[1]["onto"] == upstream.rev("v0.10.0")
    args = ("rebase", "demo", "--repo", str(upstream.path), "--series-dir", str(series_root),
            "--target", "upstream-main", "--onto", "v0.9.0")
    table = run_carry(*args, "-v")
    assert table.code == 0, table.err
    for word in ("target", "clean", "conflicts", "drops", "head", "upstream-main", "v0.9.0"):
        assert word in table.out
    brief = run_carry(*args[:6])  # every target: one summary line each, no table
    assert brief.code == 0, brief.err
    lines = brief.out.splitlines()
    for d in data:
        n = sum(p["status"] == "applied" for p in d["patches"])
        assert sum(ln.startswith(f"{d['target']}: {n} applied") for ln in lines) == 1, lines
        assert f"  {d['branch'].removeprefix('refs/heads/')} is up to date at " \
               f"{d['head'][:12]}" in lines
    assert "clean" not in brief.out and "would-conflict" not in brief.out


def test_refusals_are_one_line_and_exit_2(upstream: CommitBuilder, make_series: MakeSeries,
                                          series_root: Path) -> None:
    _feature(upstream)
    make_series(upstream, "feature", targets=[Target("upstream-main", ref="main")])
    base = ("rebase", "demo", "--repo", str(upstream.path), "--series-dir", str(series_root))
    cases = {
        "--target=nope": "unknown target 'nope'",
        "--onto=no-such-ref": "unknown revision 'no-such-ref'",
        "--continue": "no carry rebase of demo is in progress",
    }
    for arg, text in cases.items():
        res = run_carry(*base, arg)
        assert res.code == 2, (arg, res.out, res.err)
        assert text in res.err and len(res.err.strip().splitlines()) == 1
    both = run_carry(*base, "--onto", "main", "--onto", "base", "--refresh")
    assert both.code == 2 and "--refresh writes one new version" in both.err
    git(upstream.path, "checkout", "-q", "-b", "carry/demo/main")
    busy = run_carry(*base, "--onto", "main", "--force")
    assert busy.code == 2 and "checked out" in busy.err


def test_dry_run_writes_no_ref(upstream: CommitBuilder, make_series: MakeSeries,
                               series_root: Path) -> None:
    _feature(upstream)
    _drift(upstream)
    make_series(upstream, "feature")
    before = _refs(upstream.path)
    res = run_carry("rebase", "demo", "--repo", str(upstream.path), "--series-dir",
                    str(series_root), "--onto", "main", "--dry-run", "--json")
    assert res.code == 0, res.err
    [d] = json.loads(res.out)
    assert d["status"] == "applied" and d["dry_run"] and not d["updated"]
    after = _refs(upstream.path)
    assert {r for r in after if not r.startswith("refs/carry/cache/")} == set(before)


def test_branch_option_moves_an_existing_branch_only_with_force(
        upstream: CommitBuilder, make_series: MakeSeries) -> None:
    """A branch carry did not write is someone's work: `--branch` refuses it (as `apply`
    does) unless `--force`; once carry wrote it, a re-run moves it without one; a tag never."""
    _feature(upstream)
    _drift(upstream)
    s = make_series(upstream, "feature")
    upstream.branch("carried", "feature")
    kept = upstream.rev("carried")
    with pytest.raises(CarryError, match="already exists.* not overwrite"):
        rebase.run(s, Repo.open(upstream.path), rebase.Options(onto=["main"], branch="carried"))
    assert upstream.rev("carried") == kept
    [res] = rebase.run(s, Repo.open(upstream.path),
                       rebase.Options(onto=["main"], branch="carried", force=True))
    assert res.updated and upstream.rev("carried") == res.head
    assert res.branch == "refs/heads/carried"
    [same] = rebase.run(s, Repo.open(upstream.path),
                        rebase.Options(onto=["main"], branch="carried"))
    assert not same.updated and same.head == res.head  # nothing moved: its commits are kept
    assert [p.commit for p in same.patches] == [p.commit for p in res.patches]
    upstream.commit("Later", {"docs/y.md": "y\n"})
    [again] = rebase.run(s, Repo.open(upstream.path),
                         rebase.Options(onto=["main"], branch="carried"))
    assert again.updated and upstream.rev("carried") == again.head != res.head
    git(upstream.path, "tag", "v-keep", "feature")
    for bad in ("refs/tags/v-keep", "-x"):
        with pytest.raises(CarryError, match="not a valid branch name"):
            rebase.run(s, Repo.open(upstream.path),
                       rebase.Options(onto=["main"], branch=bad, force=True))
    assert upstream.rev("v-keep") == kept


def test_refresh_writes_next_version_keeping_file_numbers(
        upstream: CommitBuilder, make_series: MakeSeries, series_root: Path) -> None:
    git(series_root.parent, "init", "-q", str(series_root.parent))  # the toolkit checkout
    originals = _feature(upstream)
    # upstream takes patch 2 as is, so 0002 drops and 0003 must stay 0003
    upstream.commit(ODD_MESSAGE, {"src/new.py": "NEW = 1\n"}, author=LOGPROBZ)
    _drift(upstream)
    s = make_series(upstream, "feature")
    old_files = [p.name for p in s.patches()]
    [res] = rebase.run(s, Repo.open(upstream.path),
                       rebase.Options(onto=["main"], refresh=True))
    assert res.status == "applied"
    assert [p.status for p in res.patches] == ["applied", "dropped", "applied"]
    fresh = seriesmod.find(series_root, "demo")
    assert [p.name for p in fresh.patches()] == [old_files[0], old_files[2]]
    m = fresh.manifest
    assert m.version == 2 and m.base.commit == upstream.rev("main") and m.base.ref == "main"
    line = m.changelog[-1].summary
    assert line.startswith("rebased onto main") and "dropped 0002 (patch-id equal" in line
    assert res.refreshed is not None and res.refreshed.tag == "series/demo/v2"
    assert git(series_root.parent, "tag", "--list", "series/demo/*").split() == [
        "series/demo/v1", "series/demo/v2"]
    # the new patch files apply on the new base and give back the exact commits
    from carry.replay.chain import materialize
    from carry.series import patches as patchmod

    repo = Repo.open(upstream.path)
    plist = [patchmod.load(p.path, p.number) for p in fresh.patches()]
    commits = materialize(repo, plist, m.base.commit, repo.committer_ident())
    for sha, original in zip(commits, [originals[0], originals[2]], strict=True):
        assert repo.read_commit(sha).author == repo.read_commit(original).author
        assert repo.read_commit(sha).message == repo.read_commit(original).message
    assert git(upstream.path, "rev-parse", f"{commits[-1]}^{{tree}}") == git(
        upstream.path, "rev-parse", f"{res.head}^{{tree}}")


@pytest.mark.parametrize("fetch_first", [True])
def test_fetch_then_target_by_remote_ref(tmp_path: Path, upstream: CommitBuilder,
                                         make_series: MakeSeries, series_root: Path,
                                         fetch_first: bool) -> None:
    _feature(upstream)
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(upstream.path), str(work))
    git(work, "remote", "rename", "origin", "upstream")
    make_series(upstream, "feature", targets=[Target("upstream-main", ref="upstream/main")],
                upstream=seriesmod.Repository(repo="o/r", remote="upstream"))
    _drift(upstream)  # upstream moves after the clone: only --fetch sees it
    res = run_carry("rebase", "demo", "--repo", str(work), "--series-dir", str(series_root),
                    "--fetch", "--json")
    assert res.code == 0, res.err
    [d] = json.loads(res.out)
    assert d["onto"] == upstream.rev("main") and d["status"] == "applied"


def test_sparse_materialize_gives_the_same_commits_as_the_full_index(
        upstream: CommitBuilder, make_series: MakeSeries) -> None:
    """The cache's fast path (small per-patch indexes, trees edited in-process) must commit
    exactly what the full private index commits, renames, binaries and odd names included."""
    from carry.git import Ident
    from carry.replay import chain
    from carry.series import patches as patchmod

    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.mv("src/util.py", "src/helpers.py")
    upstream.commit("Rename with an edit", {"src/helpers.py": UTIL.replace("return 3\n",
                                                                           "return 33\n")})
    upstream.commit("Binary", {"assets/logo.bin": bytes(range(256)) * 4})
    upstream.commit("Delete README", {"README": None})
    upstream.commit("Odd name", {"docs/ünï code.md": "hello\n", "a b/c\td.txt": "tab\n"})
    upstream.commit("Nested new dir", {"x/y/z/new.py": "N = 1\n"})
    upstream.checkout("main")
    s = make_series(upstream, "feature")
    repo = Repo.open(upstream.path)
    plist = [patchmod.load(p.path, p.number) for p in s.patches()]
    base = upstream.rev("base")
    who = Ident("carry", "carry@cache", "1790000000 +0000")
    sparse = chain._sparse(repo, plist, base, who, None)
    assert sparse == chain._full(repo, plist, base, who, None)
    assert git(upstream.path, "fsck", "--strict", "--no-dangling") == ""
    # a mode-only change has no index line to build a small index from: the full one is used
    git(upstream.path, "checkout", "-q", "feature")
    (upstream.path / "src" / "core.py").chmod(0o755)
    git(upstream.path, "update-index", "--chmod=+x", "src/core.py")
    upstream.commit("Make core executable")
    upstream.checkout("main")
    s2 = make_series(upstream, "feature", name="demo2")
    plist2 = [patchmod.load(p.path, p.number) for p in s2.patches()]
    assert chain.materialize(repo, plist2, base, who) == chain._full(repo, plist2, base, who,
                                                                     None)


def test_a_rebase_that_changes_nothing_keeps_the_branch_and_its_reflog(
        upstream: CommitBuilder, make_series: MakeSeries, series_root: Path) -> None:
    """A second run onto the same commit leaves the branch as it is (as `git rebase` says
    "up to date"), so a CI loop does not push new shas of the same content every time."""
    _feature(upstream)
    _drift(upstream)
    make_series(upstream, "feature")
    args = ("rebase", "demo", "--repo", str(upstream.path), "--series-dir", str(series_root),
            "--onto", "main")
    first = run_carry(*args, "--json")
    assert first.code == 0, first.err
    [done] = json.loads(first.out)
    branch = done["branch"]
    reflog = git(upstream.path, "reflog", "show", branch)
    again = run_carry(*args, env={"GIT_COMMITTER_DATE": "@1900000000 +0000"})
    assert again.code == 0, again.err
    short = branch.removeprefix("refs/heads/")
    assert f"  {short} is up to date at {done['head'][:12]}" in again.out.splitlines()
    assert upstream.rev(branch) == done["head"]
    assert git(upstream.path, "reflog", "show", branch) == reflog
    # the same trees under another message are not the replay: the branch is rewritten
    head = done["head"]
    reworded = git(upstream.path, "commit-tree", f"{head}^{{tree}}", "-p", f"{head}~1",
                   "-m", "reworded")
    git(upstream.path, "update-ref", branch, reworded)
    fixed = run_carry(*args, "--force", "--json")
    assert fixed.code == 0, fixed.err
    [d] = json.loads(fixed.out)
    assert d["updated"] is True and d["head"] != reworded
    assert git(upstream.path, "log", "-1", "--format=%B", branch).startswith("Zoë's fix to f")
    # and once upstream moves, the branch moves
    git(upstream.path, "commit", "--allow-empty", "-q", "-m", "upstream moves")
    moved = run_carry(*args, "--json")
    assert json.loads(moved.out)[0]["updated"] is True



def test_a_damaged_changes_cache_costs_a_diff_not_a_wrong_commit(
        upstream: CommitBuilder, make_series: MakeSeries) -> None:
    _feature(upstream)
    _drift(upstream)
    s = make_series(upstream, "feature")
    repo = Repo.open(upstream.path)
    first = replay(s, repo, "main")
    want = git(upstream.path, "log", "--format=%T", f"main..{first.head}")
    kept = sorted((upstream.path / ".git" / "carry" / "changes").iterdir())
    assert kept  # the replay batched, and kept each commit's changes
    tuned = git(upstream.path, "rev-parse", "feature~2:src/util.py").encode()
    other = git(upstream.path, "rev-parse", "main:src/core.py").encode()
    damaged = [f.read_bytes().replace(tuned, other) for f in kept]
    assert all(tuned not in d for d in damaged) and any(other in d for d in damaged)
    renamed = [f.read_bytes().replace(b"src/core.py", b"src/cor2.py") for f in kept]
    # two patches' changes swapped: without the checksum each commit's tree came out wrong
    a, b = (first.patches[i].source.encode() for i in (0, 2))
    swapped = [f.read_bytes().replace(a, b"@" * 40).replace(b, a).replace(b"@" * 40, b)
               for f in kept]
    for garbage in (damaged, renamed, swapped, [b"garbage"] * len(kept)):
        for f, data in zip(kept, garbage, strict=True):
            f.write_bytes(data)
        again = replay(s, Repo.open(upstream.path), "main")
        assert again.status == "applied"
        assert git(upstream.path, "log", "--format=%T", f"main..{again.head}") == want


def test_a_kill_between_the_finishing_states_removals_is_undone_whole(
        upstream: CommitBuilder, make_series: MakeSeries,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The branches of two targets move in one transaction, then each target's finishing
    state is removed: a kill between the two removals leaves one state, and `--abort` must
    put back both branches, not only the one whose state is left."""
    _feature(upstream)
    _drift(upstream)
    upstream.branch("rel", "main~1")
    s = make_series(upstream, "feature")
    before = _refs(upstream.path)
    real_unlink = Path.unlink

    class Killed(BaseException):
        pass

    def unlink(self: Path, missing_ok: bool = False) -> None:
        real_unlink(self, missing_ok=missing_ok)
        if self.suffix == ".json" and "rebase" in self.parts:
            raise Killed  # the first state is gone, the process is not

    monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.raises(Killed):
        rebase.run(s, Repo.open(upstream.path), rebase.Options(onto=["main", "rel"]))
    monkeypatch.undo()
    repo = Repo.open(upstream.path)
    assert len(rebase.in_progress(repo, "demo")) == 1  # one finishing state is left
    moved = {r for r, sha in _refs(upstream.path).items() if before.get(r) != sha
             and not r.startswith(("refs/carry/cache/", "refs/carry/stops/"))}
    assert moved == {"refs/heads/carry/demo/main", "refs/heads/carry/demo/rel"}
    aborted = rebase.abort(s, repo)
    assert len(aborted) == 1 and aborted[0].restored
    after = _refs(upstream.path)
    assert {r: v for r, v in after.items() if not r.startswith("refs/carry/cache/")} == {
        r: v for r, v in before.items() if not r.startswith("refs/carry/cache/")}
    assert rebase.in_progress(repo, "demo") == []
