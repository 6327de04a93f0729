"""Recorded resolutions: a conflict resolved once is recorded in the series (`resolutions/`) and
applied by every later replay that meets the same conflict: another target at the same upstream
commit, a rerun, the next release with other lines moved around it, `carry validate`, the CI
job. A different conflict on the same patch still stops. Real git, through the CLI."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from carry.replay import rerere
from carry.replay.recorded import Hunk, Marked, align, split_lines
from carry.series import store as seriesmod
from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, run_carry, util

MakeSeries = Callable[..., Any]


@pytest.fixture
def stopped(upstream: CommitBuilder, make_series: MakeSeries,
            series_root: Path) -> dict[str, Any]:
    """Three patches; upstream changed the lines of patch 2 (h10), so a rebase onto main
    stops there. The tag `rel` is the same commit as main."""
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("One\n\nSigned-off-by: Toby Mao <toby@example.com>\n",
                    {"src/util.py": util(h1=11)}, author=TOBY)
    upstream.commit("Two: h10\n\nSigned-off-by: logprobz <logprobz@example.com>\n",
                    {"src/util.py": util(h1=11, h10=100)}, author=LOGPROBZ)
    upstream.commit("Three", {"src/core.py": "def f():\n    return 3\n"}, author=TOBY)
    upstream.checkout("main")
    upstream.commit("Upstream h10", {"src/util.py": util(h10=101)})
    upstream.tag("rel")
    make_series(upstream, "feature")
    args = ("--repo", str(upstream.path), "--series-dir", str(series_root))
    return {"up": upstream, "root": series_root, "args": args}


def carry(ctx: dict[str, Any], *args: str) -> Any:
    return run_carry(*args, *ctx["args"])


def worktree(ctx: dict[str, Any], target: str = "main") -> Path:
    """The conflict worktree of the stop onto `target`, asked for (a stop makes none)."""
    state = json.loads((ctx["up"].path / f".git/carry/rebase/demo/{target}.json").read_text())
    if not state.get("ready", True):
        assert carry(ctx, "rebase", "--resolve", "--target", target).code == 1
    return Path(state["worktree"])


def resolve_once(ctx: dict[str, Any]) -> Any:
    """Stop onto main, resolve h10 as 1001 by hand, --continue."""
    assert carry(ctx, "rebase", "demo", "--onto", "main").code == 1
    (worktree(ctx) / "src/util.py").write_text(util(h1=11, h10=1001))
    res = carry(ctx, "rebase", "--continue")
    assert res.code == 0, res.err
    return res


def test_resolve_once_then_another_target_a_rerun_and_the_next_release(
        stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    res = resolve_once(stopped)
    lines = res.out.splitlines()
    [at] = [i for i, ln in enumerate(lines) if "recorded the resolution" in ln]
    assert "0002-Two-h10.patch" in lines[at] and "as v2" in lines[at]
    keep = lines.index("  to keep the resolved patch itself in the series:")
    assert lines[keep + 1] == "    carry rebase demo --onto main --refresh", res.out
    s = seriesmod.find(stopped["root"], "demo")
    assert s.manifest.version == 2
    [rfile] = sorted((s.root / "resolutions").iterdir())
    assert rfile.name.startswith("0002-") and rfile.suffix == ".txt"
    text = rfile.read_text()
    assert 'path "src/util.py"' in text and " " + "    return 1001\n" in text
    # outside a checkout the version is kept in .versions/v2, resolution included
    assert (s.root / ".versions/v2/resolutions" / rfile.name).read_text() == text
    assert not (s.root / ".versions/v1/resolutions").exists()
    rd = carry(stopped, "range-diff", "demo", "v1", "v2")
    assert rd.code == 0 and f"resolutions: + {rfile.name}" in rd.out, rd.out + rd.err
    # the same conflict on another target at the same upstream commit: no stop
    other = carry(stopped, "rebase", "demo", "--onto", "rel")
    assert other.code == 0, other.out + other.err
    lines = other.out.splitlines()
    assert lines[1:3] == ["rel: 3 applied", "  0002 applied: conflict resolved by the resolution "
                          "recorded on v2"], other.out
    assert git(up.path, "show", "carry/demo/rel:src/util.py") == util(
        h1=11, h10=1001).strip()
    # a rerun onto main, in JSON
    again = carry(stopped, "rebase", "demo", "--onto", "main", "--json")
    assert again.code == 0, again.err
    [d] = json.loads(again.out)
    two = d["patches"][1]
    assert two["status"] == "applied" and two["resolutions"] == [rfile.stem]
    assert two["reason"] == "conflict resolved by the resolution recorded on v2"
    assert d["patches"][0]["resolutions"] == [] and d["status"] == "applied"
    # the next release: upstream moved on around the hunk (h9, h11, a new file)
    up.commit("Upstream h9 h11", {"src/util.py": util(h9=90, h10=101, h11=110),
                                  "src/new.py": "N = 1\n"})
    up.tag("rel2")
    nxt = carry(stopped, "rebase", "demo", "--onto", "rel2")
    assert nxt.code == 0, nxt.out + nxt.err
    assert "  0002 applied: conflict resolved by the resolution recorded on v2" \
        in nxt.out.splitlines()
    assert git(up.path, "show", "carry/demo/rel2:src/util.py") == util(
        h1=11, h9=90, h10=1001, h11=110).strip()


def test_a_different_conflict_on_the_same_patch_still_stops(stopped: dict[str, Any]) -> None:
    up: CommitBuilder = stopped["up"]
    resolve_once(stopped)
    up.commit("Upstream h10 again", {"src/util.py": util(h10=102)})
    res = carry(stopped, "rebase", "demo", "--onto", "main", "--json")
    assert res.code == 1, res.err
    [d] = json.loads(res.out)
    assert [p["status"] for p in d["patches"]] == ["applied", "conflict", "pending"]
    assert d["patches"][1]["resolutions"] == []


def test_refresh_keeps_the_resolutions_and_status_prunes_what_no_longer_matches(
        stopped: dict[str, Any]) -> None:
    """In a checkout (versions are tags): the recording is v2, a refresh v3 that keeps the
    file; the refreshed patch holds the resolution itself, so status says the recorded one
    no longer matches, and --prune removes it as v4. Every version's tag holds what it had."""
    up: CommitBuilder = stopped["up"]
    root: Path = stopped["root"]
    git(root.parent, "init", "-q")
    resolve_once(stopped)
    name = next((root / "demo/resolutions").iterdir()).name
    status = carry(stopped, "status", "demo", "--json")
    assert status.code == 0, status.err
    [s] = json.loads(status.out)["series"]
    assert [(r["file"], r["patch"], r["path"], r["version"], r["unmatched"])
            for r in s["resolutions"]] == [(f"resolutions/{name}", "0002", "src/util.py", 2, "")]
    ref = carry(stopped, "rebase", "demo", "--onto", "main", "--refresh")
    assert ref.code == 0, ref.out + ref.err
    assert "conflict resolved by the resolution recorded on v2" in ref.out
    series = seriesmod.find(root, "demo")
    assert series.manifest.version == 3 and (series.root / "resolutions" / name).is_file()
    for v in ("v2", "v3"):
        assert git(root.parent, "ls-tree", "--name-only", f"series/demo/{v}:resolutions") == name
    assert "resolutions" not in git(root.parent, "ls-tree", "--name-only", "series/demo/v1")
    # range-diff of the versions says which resolutions came and went
    rd = carry(stopped, "range-diff", "demo", "v1", "v2")
    assert rd.code == 0, rd.err
    assert f"resolutions: + {name}" in rd.out
    # the refreshed 0002 carries the resolution: the recorded conflict cannot happen again
    text = carry(stopped, "status", "demo")
    assert text.code == 0, text.err
    at = text.out.splitlines().index(f"  resolution resolutions/{name}")  # too long for one
    assert text.out.splitlines()[at + 1] == "    (0002, recorded on v2) for: src/util.py"
    verbose = carry(stopped, "status", "demo", "-v")
    assert f"resolution resolutions/{name} (0002, src/util.py, recorded on v2)" in verbose.out
    assert "NO LONGER MATCHES: patch 0002 no longer holds the lines" in \
        " ".join(text.out.split())  # wrapped to the terminal's width
    assert f"    carry status demo --repo {up.path} --prune" in text.out.splitlines()
    pruned = carry(stopped, "status", "demo", "--prune", "--json")
    assert pruned.code == 0, pruned.err
    [p] = json.loads(pruned.out)["series"]
    assert list(p["pruned"]) == [f"resolutions/{name}"] and p["pruned_version"] == 4
    assert p["resolutions"] == []
    series = seriesmod.find(root, "demo")
    assert series.manifest.version == 4 and not (series.root / "resolutions").exists()
    assert "pruned 1 recorded resolution" in series.manifest.changelog[-1].summary
    assert git(root.parent, "ls-tree", "--name-only", "series/demo/v3:resolutions") == name
    # nothing more to prune: no new version
    again = carry(stopped, "status", "demo", "--prune", "--json")
    assert again.code == 0 and seriesmod.find(root, "demo").manifest.version == 4
    assert run_carry("status", "--prune", "--series-dir", str(root)).code == 2


def test_validate_ci_and_the_pr_body_apply_it_and_say_so(stopped: dict[str, Any],
                                                         tmp_path: Path) -> None:
    """`carry validate` and `carry ci` replay with the recorded resolution; the report, the
    CI summary and the PR body name the patch and the version of the resolution."""
    import sys

    up: CommitBuilder = stopped["up"]
    root: Path = stopped["root"]
    resolve_once(stopped)
    assert carry(stopped, "rebase", "demo", "--onto", "rel").code == 0
    val = carry(stopped, "validate", "demo", "--onto", "rel", "--engine", "local",
                "--python", sys.executable, "--allow-no-tests", "--json")
    assert val.code == 0, val.out + val.err
    report = json.loads(val.out)
    assert report["resolved"] == [
        "0002-Two-h10.patch: conflict resolved by the resolution recorded on v2"]
    assert report["head_tree"] == git(up.path, "rev-parse", "carry/demo/rel^{tree}")
    text = carry(stopped, "validate", "demo", "--onto", "rel", "--engine", "local",
                 "--python", sys.executable, "--allow-no-tests")
    assert text.code == 0 and "0002-Two-h10.patch: conflict resolved by the resolution " \
        "recorded on v2" in text.out and "[cached]" in text.out
    # the branch holds 0002 as resolved, not as the series has it: --force (or --refresh)
    pr = carry(stopped, "pr", "demo", "--branch", "carry/demo/rel", "--forge-repo", "lab/fork",
               "--base", "main", "--dry-run", "--force", "--json")
    assert pr.code == 0, pr.out + pr.err
    assert ("`0002-Two-h10.patch` Two: h10 (logprobz); on `rel`: conflict resolved by the "
            "resolution recorded on v2") in json.loads(pr.out)["body"]
    out = tmp_path / "out"
    ci = run_carry("ci", "--repo", str(up.path), "--engine", "local", "--python",
                   sys.executable, "--onto", "rel", "--out", str(out), "--json",
                   env={"CARRY_SERIES_DIR": str(root)})
    assert ci.code in (0, 1), ci.err
    [row] = json.loads(ci.out)["rows"]
    assert row["rebase"] == "applied" and row["resolved"] == report["resolved"]
    assert "applied<br>0002-Two-h10.patch: conflict resolved by the resolution recorded on " \
        "v2" in (out / "summary.md").read_text()
    # an edited resolution is another build: the validation cache does not answer for it
    [rfile] = (root / "demo/resolutions").iterdir()
    rfile.write_text(rfile.read_text().replace("return 1001", "return 1002"))
    edited = carry(stopped, "validate", "demo", "--onto", "rel", "--engine", "local",
                   "--python", sys.executable, "--allow-no-tests", "--json")
    assert edited.code == 0, edited.err
    again = json.loads(edited.out)
    assert not again["cached"] and again["head_tree"] != report["head_tree"]
    assert git(up.path, "show", f"{again['head']}:src/util.py") == util(
        h1=11, h10=1002).strip()


def test_markers_left_are_refused_and_nothing_is_recorded(stopped: dict[str, Any]) -> None:
    assert carry(stopped, "rebase", "demo", "--onto", "main").code == 1
    assert worktree(stopped).is_dir()  # asked for: the markers are there to resolve
    res = carry(stopped, "rebase", "--continue")
    assert res.code == 2 and "still has conflict markers" in res.err
    assert len(res.err.strip().splitlines()) == 1
    s = seriesmod.find(stopped["root"], "demo")
    assert s.manifest.version == 1 and not (s.root / "resolutions").exists()
    assert worktree(stopped).is_dir()


def test_a_resolution_that_changes_more_than_the_hunks_is_not_recorded(
        stopped: dict[str, Any]) -> None:
    """A line outside the hunk, or a file that did not conflict: recording only the hunks
    would give later replays another tree than the maintainer's, so nothing is recorded,
    and --continue says why; the patch still goes in as resolved."""
    assert carry(stopped, "rebase", "demo", "--onto", "main").code == 1
    (worktree(stopped) / "src/util.py").write_text(util(h0=7, h1=11, h10=1001))
    res = carry(stopped, "rebase", "--continue", "--json")
    assert res.code == 0, res.err
    [d] = json.loads(res.out)
    assert d["recorded"]["files"] == [] and d["recorded"]["version"] == 0
    assert d["recorded"]["not_recorded"] == [{
        "path": "src/util.py",
        "why": "the resolution changes lines outside the conflicted hunks too"}]
    assert d["patches"][1]["reason"] == "conflict resolved"
    assert carry(stopped, "rebase", "demo", "--onto", "main").code == 1
    (worktree(stopped) / "src/util.py").write_text(util(h1=11, h10=1001))
    (worktree(stopped) / "README").write_text("upstream, and a note\n")
    res = carry(stopped, "rebase", "--continue")
    assert res.code == 0, res.err
    assert ("the resolution of 0002-Two-h10.patch was not recorded: the resolution also "
            "changes README, which did not conflict") in " ".join(res.out.split())  # wrapped
    s = seriesmod.find(stopped["root"], "demo")
    assert s.manifest.version == 1 and not (s.root / "resolutions").exists()


def test_modify_delete_and_binary_conflicts_are_not_recorded(
        upstream: CommitBuilder, make_series: MakeSeries, series_root: Path) -> None:
    upstream.checkout("base")
    upstream.commit("Add data", {"data.bin": b"\0\1\2base", "src/gone.py": "G = 1\n"})
    upstream.tag("base2")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("Patch both", {"data.bin": b"\0\1\2patch", "src/gone.py": "G = 2\n"})
    upstream.checkout("base2")
    git(upstream.path, "checkout", "-q", "-B", "main")
    upstream.commit("Upstream", {"data.bin": b"\0\1\2upstream", "src/gone.py": None})
    make_series(upstream, "feature", base="base2")
    ctx = {"up": upstream, "root": series_root,
           "args": ("--repo", str(upstream.path), "--series-dir", str(series_root))}
    assert carry(ctx, "rebase", "demo", "--onto", "main").code == 1
    wt = worktree(ctx)
    git(wt, "add", "data.bin", "src/gone.py")
    res = carry(ctx, "rebase", "--continue", "--json")
    assert res.code == 0, res.err
    [d] = json.loads(res.out)
    assert d["recorded"]["not_recorded"] == [
        {"path": "data.bin", "why": "a binary file"},
        {"path": "src/gone.py", "why": "one side deletes or renames it"}]
    assert seriesmod.find(series_root, "demo").manifest.version == 1


def test_the_forecast_counts_a_recorded_resolution(stopped: dict[str, Any]) -> None:
    """0003 conflicts too, and its resolution is recorded: when 0002 meets a new conflict,
    0003 is not forecast to conflict, and after --skip it applies with its resolution."""
    up: CommitBuilder = stopped["up"]
    up.commit("Upstream f", {"src/core.py": "def f():\n    return 30\n"})
    assert carry(stopped, "rebase", "demo", "--onto", "main").code == 1
    (worktree(stopped) / "src/util.py").write_text(util(h1=11, h10=1001))
    assert carry(stopped, "rebase", "--continue").code == 1
    (worktree(stopped) / "src/core.py").write_text("def f():\n    return 33\n")
    done = carry(stopped, "rebase", "--continue")
    assert done.code == 0, done.err
    assert seriesmod.find(stopped["root"], "demo").manifest.version == 3
    up.commit("Upstream h10 again", {"src/util.py": util(h10=102)})
    dry = carry(stopped, "rebase", "demo", "--onto", "main", "--dry-run", "--json")
    [d] = json.loads(dry.out)
    assert [p["status"] for p in d["patches"]] == ["applied", "conflict", "pending"]
    assert carry(stopped, "rebase", "demo", "--onto", "main").code == 1
    res = carry(stopped, "rebase", "--skip", "--json")
    assert res.code == 0, res.err
    [d] = json.loads(res.out)
    assert [p["status"] for p in d["patches"]] == ["applied", "skipped", "applied"]
    assert d["patches"][2]["reason"] == "conflict resolved by the resolution recorded on v3"
    assert git(up.path, "show", "carry/demo/main:src/core.py") == "def f():\n    return 33"


def _hostile(rdir: Path, good: bytes, kind: str) -> str:
    """Damage `resolutions/` one way; the words the one-line error must hold."""
    name = rdir / "0002-00000000000000aa.txt"
    if kind == "symlink":
        name.symlink_to(rdir.parent / "series.toml")
        return "is a symbolic link"
    if kind == "fifo":
        os.mkfifo(name)
        return "not a regular file"
    if kind == "bad encoding":
        name.write_bytes(good.replace(b"return 1001", b"return \xff\xfe"))
        return "not UTF-8"
    if kind == "huge":
        with open(name, "wb") as fh:
            fh.truncate(5 << 20)
        return "more than carry reads"
    if kind == "garbage":
        name.write_text("carry resolution 1\npatch 0002\nhunks x\n")
        return "not a carry resolution: line 3"
    if kind == "truncated":
        name.write_bytes(good[: good.index(b"resolution 1")])
        return "not a carry resolution"
    if kind == "stray name":
        (rdir / "notes.md").write_text("hi\n")
        return "not a resolution file name"
    if kind == "wrong patch":
        name.write_bytes(good.replace(b"patch 0002", b"patch 0003"))
        return "records patch 0003 but is named for another"
    return _hostile_numbers(rdir, name, good, kind)


def _hostile_numbers(rdir: Path, name: Path, good: bytes, kind: str) -> str:
    """Numbers and nesting carry did not write: `²` is isdigit(), int() refuses 5,000
    digits, json.loads recurses, and `\\d` matches Arabic-Indic digits."""
    edits = {"superscript": (b"hunks 1\n", "hunks \u00b2\n".encode()),
             "5000 digits": (b"hunks 1\n", b"hunks " + b"1" * 5000 + b"\n"),
             "5000-digit version": (b"version 2\n", b"version " + b"9" * 5000 + b"\n"),
             "5000-digit section": (b"base 1\n", b"base " + b"1" * 5000 + b"\n"),
             "deep path": (b'path "src/util.py"', b"path " + b"[" * 100_000 + b"]" * 100_000),
             "deep recorded": (b"hunks 1\n", b"recorded " + b"{\"a\":" * 100_000 + b"1"
                               + b"}" * 100_000 + b"\nhunks 1\n"),
             "NUL bytes": (b"carry resolution 1\n", b"carry resolution 1\0\n")}
    if kind in edits:
        old, new = edits[kind]
        assert old in good, kind
        name.write_bytes(good.replace(old, new))
        return "not a carry resolution"
    if kind == "another conflict's name":  # prune and status know a file by its name
        name.write_bytes(good)
        return "named for another"
    if kind == "Arabic-Indic digits":
        (rdir / "\u0660\u0660\u0660\u0662-00000000000000aa.txt").write_bytes(good)
        return "not a resolution file name"
    raise AssertionError(kind)


HOSTILE = ["symlink", "fifo", "bad encoding", "huge", "garbage", "truncated", "stray name",
           "wrong patch", "superscript", "5000 digits", "5000-digit version",
           "5000-digit section", "deep path", "deep recorded", "NUL bytes",
           "Arabic-Indic digits", "another conflict's name"]


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_resolution_file_is_one_clean_line(stopped: dict[str, Any], kind: str) -> None:
    """A resolution is read as strictly as a patch: a link, a FIFO, bytes that are not
    UTF-8, a file too large, damaged text, a stray name: a replay refuses in one line (exit
    2, nothing written), `carry status` reports it and goes on; never a traceback."""
    up: CommitBuilder = stopped["up"]
    resolve_once(stopped)
    rdir = stopped["root"] / "demo" / "resolutions"
    [good] = [p.read_bytes() for p in rdir.iterdir()]
    words = _hostile(rdir, good, kind)
    refs = git(up.path, "for-each-ref")
    for args in (("rebase", "demo", "--onto", "rel"), ("rebase", "demo", "--onto", "rel",
                                                       "--dry-run", "--json")):
        res = carry(stopped, *args)
        assert res.code == 2, (kind, res.out, res.err)
        assert len(res.err.strip().splitlines()) == 1 and "Traceback" not in res.err
        assert res.err.startswith("carry: error: ") and words in res.err, res.err
    assert json.loads(res.out)["exit"] == 2
    assert git(up.path, "for-each-ref") == refs
    status = carry(stopped, "status", "demo")
    assert status.code == 0 and "Traceback" not in status.err
    assert words in " ".join(status.out.split())  # wrapped to the terminal's width


def test_a_hunk_is_known_by_its_sides_in_any_order_and_its_base() -> None:
    ours, base, theirs = (b"    return 101\n",), (b"    return 10\n",), (b"    return 100\n",)
    assert Hunk(ours, base, theirs).key() == Hunk(theirs, base, ours).key()
    assert Hunk(ours, base, theirs).key() != Hunk(ours, (b"    return 9\n",), theirs).key()
    assert Hunk(ours, base, theirs).key() != Hunk(ours, base, (b"    return 100",)).key()


# -- properties ---------------------------------------------------------------------------------

WHOLE = st.sampled_from([b"a\n", b"b\n", b"\n", b"x = 1\n", b"    return 1\n"])


@st.composite
def marked_files(draw: st.DrawFn) -> tuple[Marked, list[tuple[bytes, ...]]]:
    """A conflicted file (context blocks from a tiny alphabet, so that blocks repeat and
    resolutions look like context) and a resolution per hunk."""
    n = draw(st.integers(1, 4))
    lines = st.lists(WHOLE, max_size=4).map(tuple)
    context = [draw(lines) for _ in range(n + 1)]
    hunks = tuple(Hunk(draw(lines), draw(lines), draw(lines)) for _ in range(n))
    texts = [draw(lines) for _ in range(n)]
    if draw(st.booleans()) and texts and not context[-1]:
        texts[-1] = (*texts[-1], b"no newline at the end")
    return Marked(tuple(context), hunks), texts


@given(marked_files())
@settings(max_examples=300, deadline=None)
def test_align_recovers_a_resolution_that_fills_back_exactly(
        case: tuple[Marked, list[tuple[bytes, ...]]]) -> None:
    marked, texts = case
    resolved = marked.fill(texts)
    found = align(marked, split_lines(resolved))
    assert found is not None and marked.fill(found) == resolved


@st.composite
def three_versions(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    base = draw(st.lists(WHOLE, min_size=2, max_size=12))

    def edit() -> bytes:
        out = list(base)
        for i in sorted(draw(st.sets(st.integers(0, len(base) - 1), max_size=4)), reverse=True):
            out[i:i + 1] = draw(st.lists(WHOLE,
                                         max_size=2))
        text = b"".join(out)
        return text[:-1] if text and draw(st.booleans()) else text

    return b"".join(base), edit(), edit()


@given(three_versions(), st.data())
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_a_recorded_resolution_applied_to_its_own_conflict_gives_the_resolved_file(
        tmp_path: Path, versions: tuple[bytes, bytes, bytes], data: st.DataObject) -> None:
    """Through real git: merge-tree's conflict, any resolution of its hunks, recorded (the
    file written and read back) and applied to the same conflict: exactly that file."""
    from carry.git import Ident, Repo

    path = tmp_path / "prop"
    if not path.exists():
        git(tmp_path, "init", "-q", str(path))
    repo = Repo.open(path)
    try:
        who = Ident("A U Thor", "author@example.com", "1700000000 +0000")

        def tree(body: bytes) -> str:
            blob = repo.write_object("blob", body)
            return repo.write_object("tree", b"100644 f\0" + bytes.fromhex(blob))

        base, ours, theirs = versions
        root = repo.write_commit(tree(base), [], b"base\n", who, who)
        patch = repo.read_commit(repo.write_commit(tree(theirs), [root], b"patch\n", who, who))
        onto = tree(ours)
        _, found = rerere.conflicts(repo, patch, onto)
        if len(found) != 1 or found[0].marked is None:
            event("no conflict carry can key")
            return  # a clean merge, or markers the file itself confuses
        event(f"{len(found[0].marked.hunks)} hunk(s)")
        marked = found[0].marked
        texts = [data.draw(st.lists(WHOLE, max_size=3).map(tuple)) for _ in marked.hunks]
        if not marked.context[-1] and data.draw(st.booleans()):  # the file's end, unfinished
            texts[-1] = (*texts[-1], b"no newline")
        resolved = marked.fill(texts)
        taken = rerere.take(repo, 2, patch, onto, tree(resolved), 5, "prop")
        assert taken.skipped == [] and len(taken.files) == 1
        back = rerere.Recorded([rerere.parse(r.dump("0002-x.patch"), "prop")
                                for r in taken.files])
        done = rerere.apply(repo, back, 2, patch, onto)
        assert done is not None
        entry = repo.tree_lookup(done.tree, b"f")
        assert entry is not None and repo.read_object(entry[1])[2] == resolved
        assert done.reason == "conflict resolved by the resolution recorded on v5"
        assert rerere.apply(repo, back, 3, patch, onto) is None  # another patch's: not used
    finally:
        repo.close()


def test_two_targets_stopped_at_once_need_one_resolution(stopped: dict[str, Any]) -> None:
    """main and rel stop together; once main's resolution is recorded, --continue on rel,
    its worktree untouched, applies the recorded one instead of refusing the markers."""
    up: CommitBuilder = stopped["up"]
    assert carry(stopped, "rebase", "demo", "--onto", "main", "--onto", "rel").code == 1
    (worktree(stopped, "main") / "src/util.py").write_text(util(h1=11, h10=1001))
    assert carry(stopped, "rebase", "--continue", "--target", "main").code == 0
    res = carry(stopped, "rebase", "--continue", "--target", "rel", "--json")
    assert res.code == 0, res.err
    [d] = json.loads(res.out)
    assert d["patches"][1]["reason"] == "conflict resolved by the resolution recorded on v2"
    assert d["recorded"] == {}  # nothing new to record
    assert git(up.path, "show", "carry/demo/rel:src/util.py") == util(h1=11, h10=1001).strip()
    assert seriesmod.find(stopped["root"], "demo").manifest.version == 2


def test_recording_the_same_resolution_again_writes_nothing(stopped: dict[str, Any]) -> None:
    """A --continue run again after a kill that came after the recording: no new version."""
    from carry.git import Repo
    from carry.replay.engine import PatchResult
    from carry.replay.resolution import record

    up: CommitBuilder = stopped["up"]
    assert carry(stopped, "rebase", "demo", "--onto", "main").code == 1
    state = json.loads((up.path / ".git/carry/rebase/demo/main.json").read_text())
    (worktree(stopped) / "src/util.py").write_text(util(h1=11, h10=1001))
    res = carry(stopped, "rebase", "--continue", "--json")
    assert res.code == 0, res.err
    resolved = json.loads(res.out)[0]["patches"][1]["commit"]
    series = seriesmod.find(stopped["root"], "demo")
    repo = Repo.open(up.path)
    try:
        again = record(series, repo, PatchResult(**state["patches"][1]), state["head"],
                       resolved, "main")
    finally:
        repo.close()
    assert again.version == 0 and again.files == []
    assert len(again.already) == 1 and again.already[0].endswith("(v2)")
    assert seriesmod.find(stopped["root"], "demo").manifest.version == 2


def test_prune_keeps_a_resolution_whose_patch_renames_the_conflicted_file(
        upstream: CommitBuilder, make_series: MakeSeries, series_root: Path) -> None:
    """Patch 2 renames src/util.py to src/helpers.py and changes h10 in it; upstream changed
    h10 in src/util.py. The conflict is in the renamed file; its recorded resolution is what
    every replay uses, so status does not call it unmatched and --prune keeps it."""
    up = upstream
    up.checkout("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("One", {"src/core.py": "def f():\n    return 11\n"}, author=TOBY)
    up.mv("src/util.py", "src/helpers.py")
    up.commit("Two: move and h10", {"src/helpers.py": util(h10=100)}, author=LOGPROBZ)
    up.checkout("main")
    up.commit("Upstream h10", {"src/util.py": util(h10=101)})
    up.tag("rel")
    make_series(up, "feature")
    ctx = {"up": up, "root": series_root,
           "args": ("--repo", str(up.path), "--series-dir", str(series_root))}
    assert carry(ctx, "rebase", "demo", "--onto", "main").code == 1
    wt = worktree(ctx)
    (wt / "src/helpers.py").write_text(util(h10=1001))
    res = carry(ctx, "rebase", "--continue")
    assert res.code == 0, res.out + res.err
    [name] = [p.name for p in (series_root / "demo/resolutions").iterdir()]
    other = carry(ctx, "rebase", "demo", "--onto", "rel", "--json")
    assert other.code == 0, other.out + other.err
    assert json.loads(other.out)[0]["patches"][1]["resolutions"] == [name[:-4]]
    status = carry(ctx, "status", "demo", "--json")
    [s] = json.loads(status.out)["series"]
    assert [r["unmatched"] for r in s["resolutions"]] == [""], s["resolutions"]
    pruned = carry(ctx, "status", "demo", "--prune", "--json")
    assert pruned.code == 0, pruned.err
    assert not json.loads(pruned.out)["series"][0].get("pruned")
    assert (series_root / "demo/resolutions" / name).is_file()


@pytest.mark.parametrize("name", [b"f.py", "caf\u00e9 \"q\".py".encode()])
def test_a_conflict_asked_for_its_stages_runs_one_merge(tmp_path: Path, name: bytes,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay's merge of a conflicting patch already holds its diff3 tree and stages:
    a resolution (recorded or automatic) asking for them next runs no second `merge-tree`,
    gets what a fresh merge gives, and the conflict is named as `--name-only` names it
    (quoted when git quotes the path)."""
    from carry.git import Ident, Repo

    git(tmp_path, "init", "-q", "r")
    repo, fresh = Repo.open(tmp_path / "r"), Repo.open(tmp_path / "r")
    try:
        who = Ident("A U Thor", "author@example.com", "1700000000 +0000")

        def tree(body: bytes) -> str:
            blob = repo.write_object("blob", body)
            return repo.write_object("tree", b"100644 " + name + b"\0" + bytes.fromhex(blob))

        root = repo.write_commit(tree(b"a\nb\nc\n"), [], b"base\n", who, who)
        patch = repo.read_commit(repo.write_commit(tree(b"a\nB\nc\n"), [root], b"p\n", who, who))
        onto = tree(b"a\nX\nc\n")
        log = tmp_path / "trace"
        monkeypatch.setenv("GIT_TRACE", str(log))
        merged = repo.replay_tree(patch, onto)
        got = repo.conflicted_merge(patch, onto)
        merges = [x for x in log.read_text().splitlines() if "merge-tree" in x]
        monkeypatch.delenv("GIT_TRACE")
        assert got == fresh.conflicted_merge(patch, onto)
        graft = repo.write_commit(onto, [root], b"carry graft\n", who, who)
        named = git(tmp_path / "r", "merge-tree", "--write-tree", "--name-only",
                    "--no-messages", graft, patch.sha, check=False).splitlines()[1:]
        assert not merged.clean and list(merged.conflicts) == named
        assert len(merges) == (1 if name == b"f.py" else 2), merges
    finally:
        repo.close()
        fresh.close()
