"""Conflicts that resolve themselves, and only those (F17): a conflicted hunk whose three texts
decide its answer (both sides added entries to one collection, both made the same change, one
only re-formatted what the other changed) does not stop the replay, and says so per patch;
anything else, `--no-auto-resolve`, the manifest's `policy.auto_resolve = false` and a result
that would not parse still stop. Real git, through the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from carry.replay import autoresolve
from carry.replay.recorded import Hunk
from tests.conftest import LOGPROBZ, CommitBuilder, git, run_carry

MakeSeries = Callable[..., Any]
BASE = 'KERNELS = {\n    "a": 1,\n}\n\n\ndef run():\n    return KERNELS\n'


def conflict(up: CommitBuilder, make_series: MakeSeries, root: Path, base: str, ours: str,
             theirs: str, path: str = "src/k.py", **fields: Any) -> tuple[str, ...]:
    """A series whose one patch changes `path` from `base` to `theirs` while upstream's main
    changed it to `ours`; returns the carry arguments."""
    up.checkout("base")
    up.commit("Kernel file", {path: base})
    up.tag("kbase")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("Add c\n\nSigned-off-by: logprobz <logprobz@example.com>\n", {path: theirs},
              author=LOGPROBZ)
    up.checkout("main")
    up.commit("Kernel file", {path: base})
    up.commit("Upstream change", {path: ours})
    make_series(up, "feature", base="kbase", **fields)
    return ("--repo", str(up.path), "--series-dir", str(root))


def rebase(args: tuple[str, ...], *extra: str) -> tuple[int, dict[str, Any], str]:
    res = run_carry("rebase", "demo", "--onto", "main", "--json", *extra, *args)
    [d] = json.loads(res.out)
    return res.code, d, res.err


def test_both_sides_add_entries_to_a_dict(upstream: CommitBuilder, make_series: MakeSeries,
                                          series_root: Path) -> None:
    args = conflict(upstream, make_series, series_root, BASE,
                    BASE.replace('"a": 1,\n', '"a": 1,\n    "b": 2,\n'),
                    BASE.replace('"a": 1,\n', '"a": 1,\n    "c": 3,\n'))
    code, d, err = rebase(args)
    assert code == 0, err
    [p] = d["patches"]
    assert p["status"] == "applied"
    assert p["reason"] == ("conflict resolved by itself: both sides added entries to KERNELS "
                           "in src/k.py (resolved by carry: review)")
    assert p["resolutions"] == ["auto: both sides added entries to KERNELS in src/k.py"]
    got = git(upstream.path, "show", "carry/demo/main:src/k.py")
    assert got == BASE.replace('"a": 1,\n', '"a": 1,\n    "b": 2,\n    "c": 3,\n').strip()
    # said per patch in the text output too, and `--no-auto-resolve` stops instead
    res = run_carry("rebase", "demo", "--onto", "main", "--dry-run", *args)
    assert res.code == 0 and "0001 applied: conflict resolved by itself: both sides added " \
        "entries to KERNEL" in res.out, res.out
    code, d, _ = rebase(args, "--no-auto-resolve", "--dry-run")
    assert code == 1 and d["patches"][0]["status"] == "conflict"


def test_validate_ci_and_the_pr_body_say_resolved_by_carry(upstream: CommitBuilder,
                                                           make_series: MakeSeries,
                                                           series_root: Path,
                                                           tmp_path: Path) -> None:
    """The report, the PR body and the CI summary show the patch as resolved by carry, for
    review; the manifest's switch is another build, which the validation cache does not
    answer for."""
    import sys

    args = conflict(upstream, make_series, series_root, BASE,
                    BASE.replace('"a": 1,\n', '"a": 1,\n    "b": 2,\n'),
                    BASE.replace('"a": 1,\n', '"a": 1,\n    "c": 3,\n'))
    said = ("0001-Add-c.patch: conflict resolved by itself: both sides added entries to "
            "KERNELS in src/k.py (resolved by carry: review)")
    assert run_carry("rebase", "demo", "--onto", "main", *args).code == 0
    validate = ("validate", "demo", "--onto", "main", "--engine", "local", "--python",
                sys.executable, "--allow-no-tests", "--json", *args)
    val = run_carry(*validate)
    assert val.code == 0, val.out + val.err
    assert json.loads(val.out)["resolved"] == [said]
    pr = run_carry("pr", "demo", "--branch", "carry/demo/main", "--forge-repo", "lab/fork",
                   "--base", "main", "--dry-run", "--force", "--json", *args)
    assert pr.code == 0, pr.out + pr.err
    assert "on `main`: conflict resolved by itself: both sides added entries to KERNELS in " \
        "src/k.py (resolved by carry: review)" in json.loads(pr.out)["body"]
    out = tmp_path / "out"
    ci = run_carry("ci", "--repo", str(upstream.path), "--engine", "local", "--python",
                   sys.executable, "--onto", "main", "--out", str(out), "--json",
                   env={"CARRY_SERIES_DIR": str(series_root)})
    assert ci.code in (0, 1), ci.err
    assert f"<br>{said}" in (out / "summary.md").read_text()
    manifest = series_root / "demo" / "series.toml"
    manifest.write_text(manifest.read_text().replace("[policy]\n",
                                                     "[policy]\nauto_resolve = false\n"))
    off = run_carry(*validate)
    assert off.code == 1 and "does not replay onto" in off.err, off.out + off.err


def test_the_manifest_switch_turns_it_off(upstream: CommitBuilder, make_series: MakeSeries,
                                          series_root: Path) -> None:
    args = conflict(upstream, make_series, series_root, BASE,
                    BASE.replace('"a": 1,\n', '"a": 1,\n    "b": 2,\n'),
                    BASE.replace('"a": 1,\n', '"a": 1,\n    "c": 3,\n'))
    manifest = series_root / "demo" / "series.toml"
    text = manifest.read_text()
    assert "[policy]" in text
    manifest.write_text(text.replace("[policy]\n", "[policy]\nauto_resolve = false\n"))
    code, d, _ = rebase(args, "--dry-run")
    assert code == 1 and d["patches"][0]["status"] == "conflict"


def test_entries_after_a_last_entry_without_a_comma(upstream: CommitBuilder,
                                                    make_series: MakeSeries,
                                                    series_root: Path) -> None:
    base = 'from m import (\n    a,\n    b\n)\n__all__ = ["a", "b"]\n'
    args = conflict(upstream, make_series, series_root, base,
                    base.replace("    b\n", "    b,\n    c\n"),
                    base.replace("    b\n", "    b,\n    d\n"))
    code, d, err = rebase(args)
    assert code == 0, err
    assert "both sides added entries to the import list of m" in d["patches"][0]["reason"]
    assert git(upstream.path, "show", "carry/demo/main:src/k.py") == \
        base.replace("    b\n", "    b,\n    c,\n    d\n").strip()


def test_both_sides_add_definitions(upstream: CommitBuilder, make_series: MakeSeries,
                                    series_root: Path) -> None:
    base = "def a():\n    return 1\n"
    args = conflict(upstream, make_series, series_root, base,
                    base + "\n\ndef b():\n    return 2\n",
                    base + "\n\n@cache\ndef c():\n    return 3\n")
    code, d, err = rebase(args)
    assert code == 0, err
    assert "both sides added definitions (b, c)" in d["patches"][0]["reason"]
    assert git(upstream.path, "show", "carry/demo/main:src/k.py") == (
        base + "\n\ndef b():\n    return 2\n\n\n@cache\ndef c():\n    return 3").strip()


def test_both_sides_add_arguments_one_side_rewrapped(upstream: CommitBuilder,
                                                     make_series: MakeSeries,
                                                     series_root: Path) -> None:
    """Upstream re-wrapped the call as it added an argument, the patch added another (vLLM's
    cudagraph_utils.py, F17): merged on the syntax tree, in upstream's layout."""
    base = "def g(n):\n    d = BD(num_tokens=n)\n    return d\n"
    ours = "def g(n):\n    d = BD(\n        num_tokens=n, has_lora=False\n    )\n    return d\n"
    theirs = "def g(n):\n    d = BD(\n        num_tokens=n,\n        uniform=n == 1,\n    )\n" \
        "    return d\n"
    args = conflict(upstream, make_series, series_root, base, ours, theirs)
    code, d, err = rebase(args)
    assert code == 0, err
    assert "both sides added entries to the arguments of BD(...) in src/k.py" \
        in d["patches"][0]["reason"]
    assert git(upstream.path, "show", "carry/demo/main:src/k.py") == (
        "def g(n):\n    d = BD(\n        num_tokens=n, has_lora=False,\n        uniform=n == 1\n"
        "    )\n    return d")


def test_both_sides_made_the_same_change(upstream: CommitBuilder, make_series: MakeSeries,
                                         series_root: Path) -> None:
    base = "x = 1\ny = 2\nz = 3\n"
    args = conflict(upstream, make_series, series_root, base, "x = 10\ny = 2\nz = 3\n",
                    "x = 10\ny = 20\nz = 3\n", path="conf.txt")
    code, d, err = rebase(args)
    assert code == 0, err
    assert "both sides made the same change in conf.txt" in d["patches"][0]["reason"]
    assert git(upstream.path, "show", "carry/demo/main:conf.txt") == "x = 10\ny = 20\nz = 3"


def test_a_whitespace_only_reflow(upstream: CommitBuilder, make_series: MakeSeries,
                                  series_root: Path) -> None:
    base = "result = compute(alpha, beta, gamma)\n"
    ours = "result = compute(\n    alpha,\n    beta,\n    gamma,\n)\n"
    theirs = "result = compute(alpha, beta, delta)\n"
    args = conflict(upstream, make_series, series_root, base, ours, theirs)
    code, d, err = rebase(args)
    assert code == 0, err
    assert "upstream only re-formatted what the other side changed in src/k.py" \
        in d["patches"][0]["reason"]
    assert git(upstream.path, "show", "carry/demo/main:src/k.py") == theirs.strip()


def test_a_true_conflict_still_stops(upstream: CommitBuilder, make_series: MakeSeries,
                                     series_root: Path) -> None:
    args = conflict(upstream, make_series, series_root, BASE, BASE.replace('"a": 1', '"a": 2'),
                    BASE.replace('"a": 1', '"a": 3'))
    code, d, _ = rebase(args, "--dry-run")
    assert code == 1 and d["patches"][0]["status"] == "conflict"


def test_a_result_that_would_not_parse_stops(upstream: CommitBuilder, make_series: MakeSeries,
                                             series_root: Path) -> None:
    """Two arguments added at one place: each side parses, their sum does not (a positional
    argument after `**k`)."""
    base = "f(\n    a,\n)\n"
    args = conflict(upstream, make_series, series_root, base, "f(\n    a,\n    **k,\n)\n",
                    "f(\n    a,\n    d,\n)\n")
    code, d, _ = rebase(args, "--dry-run")
    assert code == 1 and d["patches"][0]["status"] == "conflict"


def test_the_same_key_added_by_both_stops(upstream: CommitBuilder, make_series: MakeSeries,
                                          series_root: Path) -> None:
    """Both add "b" with other values: concatenated, the patch's would silently win."""
    args = conflict(upstream, make_series, series_root, BASE,
                    BASE.replace('"a": 1,\n', '"a": 1,\n    "b": 2,\n'),
                    BASE.replace('"a": 1,\n', '"a": 1,\n    "b": 3,\n'))
    code, d, _ = rebase(args, "--dry-run")
    assert code == 1 and d["patches"][0]["status"] == "conflict"


def resolves(base: str, ours: str, theirs: str) -> list[str] | None:
    """What the one conflicted hunk of `git merge-file --diff3` says when it resolves by
    itself in a Python file, or None."""
    import subprocess
    import tempfile

    from carry.replay.recorded import parse_marked

    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("o", ours), ("b", base), ("t", theirs)):
            (Path(tmp) / name).write_text(text)
        subprocess.run(["git", "merge-file", "--diff3", "o", "b", "t"], cwd=tmp)
        marked = parse_marked((Path(tmp) / "o").read_bytes())
    assert marked is not None
    cands = [autoresolve.candidate(h, True) for h in marked.hunks]
    if any(c is None for c in cands):
        return None
    texts = [c.text for c in cands if c is not None]
    return autoresolve.confirm(marked.fill(texts), marked, texts,
                               {i: c for i, c in enumerate(cands) if c is not None})


def test_what_would_silently_replace_something_stops() -> None:
    body = "class C:\n    x = 1\n"
    # the same name defined by both, a keyword given twice, additions in a function body
    assert resolves(body, body + "\n    def f(self):\n        return 1\n",
                    body + "\n    def f(self, a):\n        return a\n") is None
    assert resolves(body, body + "    y = 1\n", body + "    z = 2\n") == [
        "both sides added definitions (y, z)"]
    call = "r = g(\n    a,\n)\n"
    assert resolves(call, call.replace("a,", "a,\n    k=1,"), call.replace("a,", "a,\n    k=2,")) \
        is None
    fn = "def f():\n    x = 1\n"
    assert resolves(fn, fn + "    y = 1\n", fn + "    z = 2\n") is None
    # a string that runs past the hunk, which upstream changed, is not a re-format
    doc = 'S = """one\ntwo\n"""\n'
    assert resolves(doc, doc.replace("S =", "S  =").replace("two", "too"),
                    doc.replace("S =", "T =")) is None


@pytest.mark.parametrize(("base", "ours", "theirs"), [
    ((), (b"a\n",), (b"a\n",)),  # same
    ((b"x = f(a, b)\n",), (b"x = f(\n", b"    a,\n", b"    b,\n", b")\n"), (b"x = f(a, c)\n",)),
])
def test_candidates(base: tuple[bytes, ...], ours: tuple[bytes, ...],
                    theirs: tuple[bytes, ...]) -> None:
    assert autoresolve.candidate(Hunk(ours, base, theirs), True) is not None
    # the other way round too: which side is upstream's does not decide whether it resolves
    assert autoresolve.candidate(Hunk(theirs, base, ours), True) is not None


def test_a_resumed_rebase_keeps_no_auto_resolve(upstream: CommitBuilder,
                                                make_series: MakeSeries,
                                                series_root: Path) -> None:
    """Begun with `--no-auto-resolve`, a rebase resumed with `--continue` still stops at a
    conflict its three texts decide (it is in the state); a state from before the field was
    added resumes with it on."""
    base = {"src/a.py": "A = 1\n", "src/k.py": BASE}
    upstream.checkout("base")
    upstream.commit("Two files", base)
    upstream.tag("kbase")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("Change a", {"src/a.py": "A = 3\n"})
    upstream.commit("Add c", {"src/k.py": BASE.replace('"a": 1,\n', '"a": 1,\n    "c": 3,\n')})
    upstream.checkout("main")
    upstream.commit("Two files", base)
    upstream.commit("Upstream change", {
        "src/a.py": "A = 2\n", "src/k.py": BASE.replace('"a": 1,\n', '"a": 1,\n    "b": 2,\n')})
    make_series(upstream, "feature", base="kbase")
    args = ("--repo", str(upstream.path), "--series-dir", str(series_root))
    assert run_carry("rebase", "demo", "--onto", "main", "--no-auto-resolve", *args).code == 1
    path = upstream.path / ".git/carry/rebase/demo/main.json"
    state = json.loads(path.read_text())
    assert state["auto_resolve"] is False and state["position"] == 0
    assert run_carry("rebase", "--resolve", *args).code == 1
    (Path(state["worktree"]) / "src/a.py").write_text("A = 23\n")
    res = run_carry("rebase", "--continue", "--json", *args)
    assert res.code == 1, res.out + res.err
    [d] = json.loads(res.out)
    assert [p["status"] for p in d["patches"]] == ["applied", "conflict"], d["patches"]
    state = json.loads(path.read_text())
    assert state["auto_resolve"] is False and state["position"] == 1
    from carry.rebase.state import RebaseState

    del state["auto_resolve"]  # as written before the field existed: auto-resolve was on
    assert RebaseState.from_json(state).auto_resolve is True


_LIST = 'X = [\n    "a",\n]\n'


@pytest.mark.parametrize(("base", "ours", "theirs"), [
    # one entry added by both, written differently: kept twice
    (_LIST, _LIST.replace('"a",', '"a",\n    "b",'), _LIST.replace('"a",', "\"a\",\n    'b',")),
    (_LIST, _LIST.replace('"a",', '"a",\n    "b",  # up'),
     _LIST.replace('"a",', '"a",\n    "b",  # mine')),
    (_LIST, _LIST.replace('"a",', '"a",\n    "b", "c",'),
     _LIST.replace('"a",', '"a",\n    "d", "b",')),
    ("S = {\n    1,\n}\n", "S = {\n    1,\n    2,\n}\n", "S = {\n    1,\n    2 ,\n}\n"),
    ("from m import (\n    a,\n)\n", "from m import (\n    a,\n    b,\n)\n",
     "from m import (\n    a,\n    b as b,\n)\n"),
    # a `**` mapping next to a keyword the other side added: `b` may be given twice
    ("f(\n    a=1,\n)\n", "f(\n    a=1,\n    b=2,\n)\n", 'f(\n    a=1,\n    **{"b": 3},\n)\n'),
    ("r = f(a)\n", "r = f(a, b=2)\n", "r = f(\n    a,\n    **k,\n)\n"),
    # positional arguments added by both: each meant its own position
    ("f(\n    a,\n)\n", "f(\n    a,\n    b,\n)\n", "f(\n    a,\n    c,\n)\n"),
    ("r = f(a)\n", "r = f(a, b)\n", "r = f(\n    a,\n    c,\n)\n"),
    ('D = {\n    "a": 1,\n}\n', 'D = {\n    "a": 1,\n    "b": 2,\n}\n',
     'D = {\n    "a": 1,\n    **extra,\n}\n'),
])
def test_what_both_sides_added_that_may_clash_stops(base: str, ours: str,
                                                        theirs: str) -> None:
    assert resolves(base, ours, theirs) is None
    assert resolves(base, theirs, ours) is None


def test_a_huge_hunk_stops_at_once() -> None:
    """Both sides made the same change to a 5,000-line block, one side another change too:
    decidable, but the line diffs are quadratic (minutes for 20,000 lines, in every replay
    and probe), so a hunk longer than MAX_LINES stops instead."""
    import time

    n = 5 * autoresolve.MAX_LINES
    base = tuple(f"x{i} = {i}\n".encode() for i in range(n))
    ours = (b"x0 = -1\n", *base[1:])
    theirs = (b"x0 = -1\n", *base[1:-1], b"x = 0\n")
    start = time.monotonic()
    assert autoresolve.candidate(Hunk(ours, base, theirs), True) is None
    assert autoresolve.candidate(Hunk(ours, base, theirs), False) is None
    assert time.monotonic() - start < 1
    small = Hunk(ours[:10] + (b"y = 1\n",), base[:10] + (b"y = 0\n",),
                 theirs[:10] + (b"y = 1\n",))
    assert autoresolve.candidate(small, False) is not None


_YAML = 'S = """\nkey:\n  a: 1\n  b: 1\n"""\n'
_DOC = 'def f():\n    """Doc.\n\n    one two three\n    """\n'
_IF = "def f(x):\n    if x:\n        a()\n    b()\n"


@pytest.mark.parametrize(("base", "ours", "theirs"), [
    # a re-indent inside a string is a change of its content, not a re-format
    (_YAML, _YAML.replace("  a: 1", "    a: 1"), _YAML.replace("  a: 1", "  a: 2")),
    (_DOC, _DOC.replace("one two three", "one two\n    three"),
     _DOC.replace("one two three", "one two four")),
    # a statement moved into a block, or two put on one line, is a change, not a re-format
    (_IF, _IF.replace("\n    b()", "\n        b()"), _IF.replace("a()", "c()")),
    ("x = 1\ny = 2\n", "x = 1; y = 2\n", "x = 3\ny = 2\n"),
])
def test_what_only_looks_like_a_reformat_stops(base: str, ours: str, theirs: str) -> None:
    assert resolves(base, ours, theirs) is None
    assert resolves(base, theirs, ours) is None
