"""Conflicts that resolve themselves (F17), measured on real vLLM history: the fork's own
commits replayed onto later upstream points, every conflicted hunk classified, with and
without automatic resolution.

The fork's path comes from $CARRY_REAL_FORK (a clone or bare repository); without it the bench
says so in one line and exits 0. The series and the targets are bench_real_fork.py's (the
fork's `--series` since its merge-base with the newest upstream merge, the commits `--targets`
first-parent steps after it). The fork is read through a `--shared` bare clone in a temporary
directory: nothing is written into it.

For each target, in process (carry's replay, no CLI):

1. the loop without automatic resolution (`Recorded(auto=False)`), skipping at every stop as
   `carry rebase --skip` does; at each stop, every conflicted hunk is classified
   (`autoresolve.candidate`, then `confirm` for the file) and timed;
2. the same loop with it (`auto=True`): the stops left, and each patch that resolved by
   itself with what it says;
3. each automatic result checked: the file parses (Python), no conflict marker is left, and
   every line either side added to the hunk (against its base) is in the result exactly as
   many times as the sides added it, but for the side that only re-formatted.

`--show` prints each resolved hunk (the three sides and the result) for a review by eye.

Usage: CARRY_REAL_FORK=/path/to/vllm.git python bench/bench_autoresolve.py [--show]
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tooling"))
from bench_real_fork import pick, real_fork  # noqa: E402
from carry.git import Ident, Repo  # noqa: E402
from carry.replay import autoresolve, rerere  # noqa: E402
from carry.replay.recorded import Hunk  # noqa: E402
from carry.replay.runs import PatchResult, run_steps  # noqa: E402

COMMITTER = Ident("carry bench", "bench@example.com", "1790000000 +0000")


@dataclass
class Found:
    """One conflicted hunk at a stop of the loop without automatic resolution."""

    patch: int
    path: str
    hunk: Hunk
    kind: str = ""  # the class that resolves it, "" when none does
    said: str = ""
    text: tuple[bytes, ...] = ()
    checks: list[str] = field(default_factory=list)  # what failed of the checks


def loop(repo: Repo, series: list[str], onto: str, auto: bool
         ) -> tuple[list[PatchResult], list[int], float]:
    """The replay of the whole series onto `onto`, each stop skipped (as `--skip` does): the
    steps, the patches it stopped at, and its seconds."""
    steps = [PatchResult(n, f"{n:04d}", "", "", source=sha) for n, sha in enumerate(series, 1)]
    recorded, stops = rerere.Recorded([], auto), []
    head, start = onto, time.perf_counter()
    while True:
        head, stop, _ = run_steps(repo, steps, head, COMMITTER, recorded=recorded)
        if stop is None:
            return steps, stops, time.perf_counter() - start
        stops.append(steps[stop].number)
        steps[stop].status = "skipped"


def hunks_at_stops(repo: Repo, series: list[str], onto: str) -> tuple[list[Found], float]:
    """Every conflicted hunk of every stop of the loop without automatic resolution, each
    classified as a replay with it would; and the seconds the classifying took."""
    steps = [PatchResult(n, f"{n:04d}", "", "", source=sha) for n, sha in enumerate(series, 1)]
    head, found, spent = onto, [], 0.0
    while True:
        head, stop, _ = run_steps(repo, steps, head, COMMITTER, recorded=rerere.Recorded())
        if stop is None:
            return found, spent
        commit = repo.read_commit(steps[stop].source)
        t0 = time.perf_counter()
        _, paths = rerere.conflicts(repo, commit, repo.read_commit(head).tree)
        for c in paths:
            found += classify(c, steps[stop].number)
        spent += time.perf_counter() - t0
        steps[stop].status = "skipped"


def classify(c: rerere.Conflicted, patch: int) -> list[Found]:
    if c.marked is None:
        return [Found(patch, c.name, Hunk((), (), ()), said=f"no hunks: {c.why}")]
    python = c.name.endswith(autoresolve.PYTHON)
    out = []
    for hunk in c.marked.hunks:
        cand = autoresolve.candidate(hunk, python)
        f = Found(patch, c.name, hunk)
        if cand is not None:
            texts = [cand.text if h is hunk else h.ours for h in c.marked.hunks]
            data = c.marked.fill(texts)
            said = autoresolve.confirm(data, c.marked, texts,
                                       {c.marked.hunks.index(hunk): cand}) if python else \
                [autoresolve.describe(cand)]
            if said is not None:
                f.kind, f.said, f.text = cand.kind, said[0], cand.text
                f.checks = check(hunk, cand, data, python)
        out.append(f)
    return out


def check(hunk: Hunk, cand: autoresolve.Candidate, data: bytes,
          python: bool) -> list[str]:
    """What is wrong with an automatic result (nothing, when it is right as far as the three
    texts can tell): it parses, holds no marker, and keeps every added line once."""
    bad = []
    if python:
        try:
            ast.parse(data)
        except SyntaxError as exc:
            bad.append(f"does not parse: {exc.msg}")
    if any(line.startswith((b"<<<<<<<", b">>>>>>>")) for line in cand.text):
        bad.append("a conflict marker is left")
    if cand.named:  # merged on the syntax tree: each entry a side added is there once
        return bad + _entries_once(hunk, cand)
    base = Counter(hunk.base)
    sides = [hunk.ours, hunk.theirs]
    if cand.kind == autoresolve.Kind.REFORMAT:
        sides = [hunk.theirs] if cand.side == "upstream" else [hunk.ours]
    added: Counter[bytes] = Counter()
    for side in sides:
        mine = Counter(side) - base
        added = added | mine if cand.kind == autoresolve.Kind.SAME else added + mine
    got = Counter(cand.text) - base
    for line, n in added.items():
        if line.strip(b" \t\r\n,") and got[line] != n and got[line.rstrip(b"\n") + b",\n"] != n:
            bad.append(f"{line.strip()[:50]!r} kept {got[line]} times, added {n}")
    return bad


def _entries_once(hunk: Hunk, cand: autoresolve.Candidate) -> list[str]:
    """The result's collection holds the base's entries, then upstream's new ones, then the
    patch's, each once, and nothing else differs (`pymerge`'s own walk, on the result)."""
    from carry.replay import pymerge

    parsed = [pymerge._parse(x) for x in (hunk.base, hunk.ours, hunk.theirs, cand.text)]
    if any(p is None for p in parsed):
        return ["a side or the result does not parse alone"]
    b, o, t, r = (p[0] for p in parsed if p is not None)
    sides: list[tuple[ast.AST, ast.AST, ast.AST]] = []
    result: list[tuple[ast.AST, ast.AST, ast.AST]] = []
    if not (pymerge._walk(b, o, t, sides) and pymerge._walk(b, r, r, result)):
        return ["the result differs from the base elsewhere than in one collection"]
    nb, no, nt = (pymerge._dumps(n) for n in sides[0])
    want = nb + no[len(nb):] + nt[len(nb):]
    got = pymerge._dumps(result[0][1])
    return [] if got == want else [f"the collection holds {len(got)} entries, not {len(want)}"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--series", default="main")
    ap.add_argument("--upstream", default=None)
    ap.add_argument("--targets", default="130,212")
    ap.add_argument("--show", action="store_true")
    args = ap.parse_args()
    fork = real_fork()
    if not fork:
        return
    shape = pick(fork, args.series, args.upstream, [int(x) for x in args.targets.split(",")])
    with tempfile.TemporaryDirectory(prefix="carry-auto-") as tmp:
        bare = Path(tmp) / "fork.git"
        subprocess.run(["git", "clone", "-q", "--bare", "--shared", fork, str(bare)], check=True)
        repo = Repo(bare)
        try:
            for steps_after, onto in shape.targets:
                target(repo, shape.series, onto, steps_after, args.show)
        finally:
            repo.close()


def target(repo: Repo, series: list[str], onto: str, steps_after: int, show: bool) -> None:
    found, spent = hunks_at_stops(repo, series, onto)
    _, stops_off, t_off = loop(repo, series, onto, False)
    on, stops_on, t_on = loop(repo, series, onto, True)
    auto = [s for s in on if any(r.startswith("auto: ") for r in s.resolutions)]
    content = [f for f in found if f.hunk.base or f.hunk.ours or f.hunk.theirs]
    print(f"target {onto[:9]} ({steps_after} first-parent steps after the base), "
          f"{len(series)} patches")
    print(f"  stops: {len(stops_off)} without, {len(stops_on)} with automatic resolution; "
          f"patches resolved by themselves: {', '.join(f'{s.number:04d}' for s in auto) or '-'}")
    print(f"  conflicted hunks at the stops: {len(content)} (+{len(found) - len(content)} "
          f"paths without hunks); by class: "
          + ", ".join(f"{k}: {n}" for k, n in Counter(f.kind or "stops" for f in content)
                      .most_common()))
    print(f"  replay time: {t_off:.2f} s without, {t_on:.2f} s with; classifying every hunk "
          f"of every stop: {spent:.2f} s")
    for s in auto:
        print(f"  {s.number:04d}: {s.reason}")
    for f in content:
        if f.kind:
            verdict = "right by the checks" if not f.checks else "WRONG: " + "; ".join(f.checks)
            print(f"  hunk {f.patch:04d} {f.path}: {f.said}: {verdict}")
            if show:
                for label, lines in (("upstream", f.hunk.ours), ("base", f.hunk.base),
                                     ("patch", f.hunk.theirs), ("result", f.text)):
                    print(f"    -- {label}")
                    for line in lines:
                        print("    " + line.decode("utf-8", "replace").rstrip("\n"))


if __name__ == "__main__":
    main()
