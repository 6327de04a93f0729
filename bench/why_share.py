"""What a replay's root causes cost against the replay: `replay_target` of the series in
one process with `replay.why` in the foreground (not on its thread), the why work timed
apart. Prints the CPU seconds (the why work's thread and its git children against the rest
of the process and its children), the git processes the why work started (by command),
each conflicting patch's answer as one JSON line (`answers`), and, last, the wall seconds
and why's over the rest's. With `--answers FILE` the answers are also written there, or,
when FILE exists, checked against it (exit 1 on a difference): a faster why must give the
same answers; with `--check` they are checked (exit 1) against the same whys worked out
again with every merge asked alone, untimed.

Usage: python bench/why_share.py REPO SERIES_DIR ONTO_REF [--answers FILE] [--check]
(PYTHONPATH: this tooling/)
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from carry.git import Repo
from carry.replay import engine
from carry.replay import why as whymod
from carry.replay.causes import CONFLICTING
from carry.replay.chain import load_chain
from carry.replay.runs import PatchResult
from carry.replay.targets import ResolvedTarget
from carry.series import store


def children() -> float:
    """CPU seconds of the git processes waited for so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def process() -> float:
    """CPU seconds of this process (every thread) and its waited-for children."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime + children()


def listed(patches: list[PatchResult]) -> list[dict[str, Any]]:
    return [{"file": p.file, "status": p.status, "cause": p.cause, "builds_on": p.builds_on,
             "look": p.look} for p in patches if p.status in CONFLICTING]


def one_by_one(repo: Repo, done: engine.Replayed, onto: str) -> list[dict[str, Any]]:
    """The same whys worked out again (untimed, none recalled from `.git/carry/why/`) with
    `clean_merges` telling nothing, so that every merge runs by itself where a patch asks
    it, as before the whys were asked together; each at the paths it conflicts on, as in
    the replay (the stop's are the replay's, the others' their forecast)."""
    patches = done.result.patches
    shutil.rmtree(repo.carry_dir() / "why", ignore_errors=True)
    steps = [replace(p, cause=None, builds_on="", look="") for p in patches]
    Repo.clean_merges = lambda self, asks, known=None: [None] * len(asks)  # type: ignore
    whymod.annotate(repo, steps, onto, {} if done.stop is None else {done.stop: done.paths})
    return listed(steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo")
    ap.add_argument("series_dir")
    ap.add_argument("onto_ref")
    ap.add_argument("--answers", type=Path, default=None)
    ap.add_argument("--check", action="store_true",
                    help="check the answers against the whys with every merge asked alone")
    args = ap.parse_args()
    repo_path, series_dir, onto_ref, keep = args.repo, args.series_dir, args.onto_ref, \
        args.answers
    spent, spent_cpu, inside = [0.0], [0.0], [False]
    started: Counter[str] = Counter()
    init, add, finish = whymod.Why.__init__, whymod.Why.add, whymod.Why.finish
    popen = subprocess.Popen

    def foreground(self: Any, repo: Repo, steps: Any, onto: str, background: bool = True
                   ) -> None:
        init(self, repo, steps, onto, background=False)

    def timed(fn: Any) -> Any:
        def run(self: Any, *args: Any) -> Any:
            t0, c0 = time.perf_counter(), time.thread_time() + children()
            inside[0] = True
            try:
                return fn(self, *args)
            finally:
                inside[0] = False
                spent[0] += time.perf_counter() - t0
                spent_cpu[0] += time.thread_time() + children() - c0
        return run

    class Counted(popen):  # type: ignore[valid-type,misc]
        def __init__(self, args: Any, *rest: Any, **kw: Any) -> None:
            if inside[0] and isinstance(args, list) and args[:1] == ["git"]:
                started[next((a for a in args[1:] if not a.startswith("-") and "=" not in a),
                             "?")] += 1
            super().__init__(args, *rest, **kw)

    whymod.Why.__init__ = foreground  # type: ignore[method-assign]
    whymod.Why.add, whymod.Why.finish = timed(add), timed(finish)  # type: ignore[method-assign]
    subprocess.Popen = Counted  # type: ignore[misc]
    repo = Repo.open(Path(repo_path))
    series = store.load(Path(series_dir))
    t0, c0 = time.perf_counter(), process()
    base, carried = load_chain(series, repo)
    onto = repo.rev_parse(onto_ref)
    done = engine.replay_target(series, repo, base, carried,
                                ResolvedTarget("upstream-main", onto_ref, onto),
                                repo.committer_ident())
    total, total_cpu = time.perf_counter() - t0, process() - c0
    answers = listed(done.result.patches)
    print("answers " + json.dumps(answers, sort_keys=True))
    if keep is not None and keep.exists():
        if json.loads(keep.read_text()) != answers:
            raise SystemExit(f"the answers differ from {keep}")
        print(f"same answers as {keep}")
    elif keep is not None:
        keep.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    roots = sum(1 for p in done.result.patches if p.cause)
    print("why's git processes: " + ", ".join(f"{n} {cmd}" for cmd, n in started.most_common()))
    rest = total_cpu - spent_cpu[0]
    print(f"CPU: replay {rest:.3f} s, why {spent_cpu[0]:.3f} s, {spent_cpu[0] / rest:.3f}")
    last = (f"replay {total - spent[0]:.3f} s, why {spent[0]:.3f} s ({roots} root causes) "
            f"{spent[0] / (total - spent[0]):.3f}")
    if args.check:  # after the timing, which it would change
        if one_by_one(repo, done, onto) != answers:
            raise SystemExit("the answers differ from those with every merge asked alone")
        print("same answers as with every merge asked alone")
    print(last)


if __name__ == "__main__":
    main()
