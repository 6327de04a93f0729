"""The conflict loop on real vLLM history: carry against git's own cherry-pick loop, cold and
warm, on a copy of the public fork (local-inference-lab/vllm).

The fork's path comes from $CARRY_REAL_FORK (a clone or bare repository); without it the bench
says so in one line and exits 0. It builds the series and its targets from the fork's own
history, the same way each time:

- the upstream line: the second parent of the newest merge (on any branch) whose subject names
  upstream (`Merge remote-tracking branch 'upstream/main' into ...`); `--upstream REV` overrides;
- the series: the fork's own commits on `--series` (default `main`) since its merge-base B with
  that upstream commit, oldest first (no merges; the bench stops if there is one);
- the targets: the commits `--targets` (default 130 and 212) first-parent steps after B on the
  upstream line (a step past its end is its end).

On the public fork that is B = 391139546 ("[CI failure] Temporarily disable ... (#43119)"), 53
patches by Martin Vit and Luke Alonso, and the targets 7d1c6f23 and 0f71d0e5a, where the series
stops 19 times and applies 34 patches (the shape of issue F18).

Each round, for each target: a fresh clone (hard links, untimed) with `carry init` and `carry
import` (untimed), then, timed with a `sync` before each: carry's loop cold (no carry cache in
the clone: `carry rebase` then `carry rebase --skip` until done, each run as the `carry`
console script runs it), git's loop (`git worktree add` and `git cherry-pick B..series` in
it, `--skip` at every stop), and carry's loop again on the same clone, warm (its caches from
the cold run). Every loop is checked against git's: the same outcome for each patch
(applied, stopped, dropped) and, for each applied patch, the same tree and the same author
(name, email, date). Last, what the whys cost the first call (`why_cost`: the call's wall
time with them against without them, cold and warm), and why's own time in one thread
against the replay's (`why_share.py`), its answers checked against the whys with every
merge asked alone.

Usage: CARRY_REAL_FORK=/path/to/vllm.git python bench/bench_real_fork.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_conflicts import (  # noqa: E402
    NAME,
    TARGET,
    TOOLING,
    Ctx,
    cherry_pick_loop,
    git,
    hermetic_env,
    rebase_args,
)

# What the `carry` console script runs; `python -m carry` adds runpy's import to each call
# (5-9 ms, a tenth of a `--skip`), which no maintainer typing `carry` pays.
CONSOLE = "import sys; sys.argv[0] = 'carry'; from carry.cli.main import main; sys.exit(main())"
# The same, with no why worked out (an inert `Why`): the first call a why costs nothing in
NO_WHY = ("import sys; sys.argv[0] = 'carry'\nfrom carry.replay import why\n"
          "class Inert:\n"
          "    def __init__(self, *a, **k): pass\n"
          "    def add(self, *a): pass\n"
          "    def finish(self): pass\n"
          "    def close(self): pass\n"
          "why.Why = Inert\nfrom carry.cli.main import main; sys.exit(main())")
# What a clone holds of carry's caches, all of which a fresh clone lacks
CACHES = ("changes", "search", "why", "audit", "squash")
SERIES_REF = "refs/remotes/fork/dev/bench"
ONTO_REF = "refs/remotes/upstream/main"


def carry(ctx: Ctx, *args: str, ok: tuple[int, ...] = (0,), console: str = CONSOLE
          ) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-c", console, *args], capture_output=True,
                          env=ctx.env, cwd=ctx.root, text=True)
    if proc.returncode not in ok:
        raise SystemExit(f"carry {' '.join(args[:2])} exited {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip()[:800]}")
    return proc.returncode, proc.stdout


@dataclass
class Shape:
    base: str
    series: list[str]  # oldest first: patch N is series[N - 1]
    targets: list[tuple[int, str]]  # (first-parent steps after base, commit)


@dataclass
class Loop:
    total: float = 0.0
    first: float = 0.0
    cpu: float = 0.0  # user + system seconds of the loop's processes and their git children
    first_cpu: float = 0.0
    outcome: list[str] = field(default_factory=list)  # per patch: applied|stopped|dropped
    applied: list[tuple[int, str, str]] = field(default_factory=list)  # (patch, tree, author)


def cpu() -> float:
    """CPU seconds of every child waited for so far: on a shared machine wall time follows
    the load, CPU time what each side costs."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd: list[str], cwd: Path | str) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed: {proc.stderr.strip()[:500]}")
    return proc.stdout.strip()


def pick(fork: str, series_ref: str, upstream: str | None, steps: list[int]) -> Shape:
    """The series and targets from the fork's history (see the module's docstring)."""
    if upstream is None:
        merges = run(["git", "log", "--all", "--merges", "-i", "--grep=upstream",
                      "--format=%H %P", "-1"], fork).split()
        if len(merges) < 3:
            raise SystemExit("no merge of upstream in the fork's history: pass --upstream REV")
        upstream = merges[2]
    base = run(["git", "merge-base", series_ref, upstream], fork)
    series = run(["git", "rev-list", "--reverse", f"{base}..{series_ref}"], fork).split()
    if run(["git", "rev-list", "--merges", f"{base}..{series_ref}"], fork):
        raise SystemExit(f"{series_ref} has merges since {base[:12]}: not a series")
    line = run(["git", "rev-list", "--first-parent", "--reverse", f"{base}..{upstream}"],
               fork).split()
    return Shape(base, series, [(min(n, len(line)), line[min(n, len(line)) - 1])
                                for n in steps])


def clone(fork: str, root: Path, shape: Shape, onto: str) -> Ctx:
    """A fresh clone shaped as bench_conflicts' repository: `base`, the series at fork/dev/bench,
    the target at upstream/main, and the series imported into `series/`."""
    shutil.rmtree(root, ignore_errors=True)
    (root / "home").mkdir(parents=True)
    run(["git", "clone", "-q", "--no-checkout", fork, str(root / "repo")], root)
    ctx = Ctx(root, {}, hermetic_env(root / "home"))
    git(ctx, "tag", "base", shape.base)
    git(ctx, "update-ref", SERIES_REF, shape.series[-1])
    git(ctx, "update-ref", ONTO_REF, onto)
    for remote, slug in (("upstream", "vllm-project/vllm"), ("fork", "lab/vllm")):
        git(ctx, "config", f"remote.{remote}.url", f"/nonexistent/{slug}.git")
        git(ctx, "config", f"remote.{remote}.fetch", f"+refs/heads/*:refs/remotes/{remote}/*")
    carry(ctx, "init", NAME, "--upstream", "vllm-project/vllm", "--fork", "lab/vllm", "--repo",
          str(ctx.repo), "--dev-branch", "dev/bench", "--base", "base", "--series-dir",
          str(ctx.series))
    carry(ctx, "import", NAME, "--repo", str(ctx.repo), "--range", f"base..{SERIES_REF}",
          "--series-dir", str(ctx.series))
    return ctx


def stopped_number(ctx: Ctx, said: str) -> int:
    _, text = carry(ctx, "status", NAME, "--repo", str(ctx.repo), "--series-dir",
                    str(ctx.series), "--json")
    (series,) = json.loads(text)["series"]
    if len(series["stopped"]) != 1:
        raise SystemExit(f"carry rebase exited 1 and is not stopped: {said.strip()[:800]}")
    return int(Path(series["stopped"][0]["patch"]).name.split("-", 1)[0])


def applied(ctx: Ctx, shape: Shape, head: str, outcome: list[str], cwd: Path | None = None
            ) -> list[tuple[int, str, str]]:
    """Each commit on `head` past the target, matched in order to the patches not stopped at;
    the patches left over were dropped."""
    fmt = "--format=%T%x1f%an <%ae> %ad%x1f%s"
    rows = git(ctx, "log", "--reverse", fmt, "--date=raw", f"{ONTO_REF}..{head}",
               cwd=cwd).splitlines()
    todo = [i for i, o in enumerate(outcome) if o != "stopped"]
    wanted = [git(ctx, "log", "-1", fmt, "--date=raw", shape.series[i]).strip().split("\x1f", 1)[1]
              for i in todo]
    out, at = [], 0
    for row in rows:
        tree, author = row.split("\x1f", 1)
        while at < len(todo) and wanted[at] != author:
            outcome[todo[at]] = "dropped"
            at += 1
        if at == len(todo):
            raise SystemExit(f"a commit on {head} matches no patch: {row}")
        outcome[todo[at]] = "applied"
        out.append((todo[at] + 1, tree, author))
        at += 1
    for i in todo[at:]:
        outcome[i] = "dropped"
    return out


def carry_loop(ctx: Ctx, shape: Shape, branch: str) -> Loop:
    out = Loop(outcome=["?"] * len(shape.series))
    t0, c0 = time.perf_counter(), cpu()
    code, said = carry(ctx, *rebase_args(ctx, "--target", TARGET, "--branch", branch), ok=(0, 1))
    out.first, out.first_cpu = time.perf_counter() - t0, cpu() - c0
    while code == 1:
        out.outcome[stopped_number(ctx, said) - 1] = "stopped"
        if out.outcome.count("stopped") > len(shape.series):
            raise SystemExit("carry rebase --skip did not finish")
        t1, c1 = time.perf_counter(), cpu()
        code, said = carry(ctx, *rebase_args(ctx, "--skip"), ok=(0, 1))
        out.total += time.perf_counter() - t1
        out.cpu += cpu() - c1
    out.total += out.first
    out.cpu += out.first_cpu
    out.applied = applied(ctx, shape, branch, out.outcome)
    return out


def git_loop(ctx: Ctx, shape: Shape, wt: Path) -> Loop:
    out = Loop(outcome=["?"] * len(shape.series))
    index = {sha: i for i, sha in enumerate(shape.series)}
    t0, c0 = time.perf_counter(), cpu()
    _, stops = cherry_pick_loop(ctx, wt, ONTO_REF, len(shape.series))
    out.total, out.cpu = time.perf_counter() - t0, cpu() - c0
    for sha, _ in stops:
        out.outcome[index[sha]] = "stopped"
    out.applied = applied(ctx, shape, "HEAD", out.outcome, cwd=wt)
    git(ctx, "worktree", "remove", "--force", str(wt))
    return out


def check(which: str, c: Loop, g: Loop) -> None:
    if c.outcome != g.outcome:
        diff = [f"{i + 1:04d}: {a} vs {b}" for i, (a, b) in enumerate(zip(c.outcome, g.outcome,
                                                                          strict=True)) if a != b]
        raise SystemExit(f"{which}: carry's and git's outcomes differ: {', '.join(diff)}")
    if c.applied != g.applied:
        bad = next(x for x in zip(c.applied, g.applied, strict=False) if x[0] != x[1])
        raise SystemExit(f"{which}: carry's and git's applied commits differ: {bad}")


def worktree_cost(ctx: Ctx, wt: Path) -> tuple[float, float]:
    """The conflict worktree against `git worktree add`: carry's first call stops (untimed),
    then `carry rebase --resolve` makes the worktree with the stop's conflict checked out
    in it (timed), and is aborted (untimed); then `git worktree add --detach` of the target
    (timed), removed. Checked: carry's worktree holds the stop's unmerged paths."""
    carry(ctx, *rebase_args(ctx, "--target", TARGET, "--branch", "bench/wt"), ok=(1,))
    os.sync()
    t0 = time.perf_counter()
    carry(ctx, *rebase_args(ctx, "--resolve"), ok=(1,))
    took = time.perf_counter() - t0
    made = Path(json.loads(carry(ctx, "status", NAME, "--repo", str(ctx.repo), "--series-dir",
                                 str(ctx.series), "--json")[1])["series"][0]["stopped"][0]
                ["worktree"])
    if not git(ctx, "ls-files", "--unmerged", cwd=made).strip():
        raise SystemExit(f"carry rebase --resolve left no conflict in {made}")
    tidy(ctx, "bench/wt")
    os.sync()
    t0 = time.perf_counter()
    git(ctx, "worktree", "add", "-q", "--detach", str(wt), ONTO_REF)
    plain = time.perf_counter() - t0
    git(ctx, "worktree", "remove", "--force", str(wt))
    return took, plain


def why_share(ctx: Ctx) -> tuple[float, float]:
    """What the root causes cost against the replay they explain, wall and CPU: the first
    call's replay in one process (`bench/why_share.py`), the why work in the foreground and
    timed apart, with no why kept from before; its answers checked against the same whys
    with every merge asked alone (`--check`)."""
    shutil.rmtree(ctx.repo / ".git" / "carry" / "why", ignore_errors=True)
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("why_share.py")),
                          str(ctx.repo), str(ctx.series / NAME), ONTO_REF, "--check"],
                         env=ctx.env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"why_share.py failed: {out.stderr.strip()[-800:]}")
    (cpu_line,) = (x for x in out.stdout.splitlines() if x.startswith("CPU: "))
    return float(out.stdout.split()[-1]), float(cpu_line.split()[-1])


def why_cost(ctx: Ctx, cold: bool, pairs: int) -> list[tuple[float, float, float, float]]:
    """What the whys add to the first call, where the human waits: `pairs` pairs of first
    calls (`rebase --target`, stopping) with them and without them (an inert `Why`), the
    order alternating, each pair's (wall with, wall without, CPU with, CPU without). Before
    each call the why cache is emptied, and with `cold` every carry cache (the chain's refs
    and `.git/carry/`'s), as on a fresh clone; warm, the rest is as the loops before left
    it. The whys run on their own thread while the forecast replays, so what they cost the
    call is not their own time (`why_share`). Pairs, not medians of each side: a pair's two
    calls are seconds apart, so the host's drift mostly cancels in their difference."""
    out = []
    for k in range(pairs):
        took: dict[str, tuple[float, float]] = {}
        for console in (CONSOLE, NO_WHY)[::1 if k % 2 == 0 else -1]:
            forget(ctx, CACHES if cold else ("why",))
            os.sync()
            t0, c0 = time.perf_counter(), cpu()
            carry(ctx, *rebase_args(ctx, "--target", TARGET, "--branch", "bench/why"), ok=(1,),
                  console=console)
            took[console] = (time.perf_counter() - t0, cpu() - c0)
            tidy(ctx, "bench/why")
        out.append((took[CONSOLE][0], took[NO_WHY][0], took[CONSOLE][1], took[NO_WHY][1]))
    return out


def forget(ctx: Ctx, caches: tuple[str, ...]) -> None:
    """Empty carry's `caches` in the clone (`.git/carry/NAME`; "changes" also drops the cached
    chains, `refs/carry/cache/`)."""
    for name in caches:
        shutil.rmtree(ctx.repo / ".git" / "carry" / name, ignore_errors=True)
    if "changes" in caches:
        refs = git(ctx, "for-each-ref", "--format=delete %(refname)", "refs/carry/cache/")
        subprocess.run(["git", "update-ref", "--stdin"], input=refs, text=True, check=True,
                       cwd=ctx.repo, env=ctx.env, capture_output=True)


def tidy(ctx: Ctx, branch: str) -> None:
    carry(ctx, *rebase_args(ctx, "--abort"), ok=(0, 1, 2))
    git(ctx, "update-ref", "-d", f"refs/heads/{branch}")


def one_round(fork: str, work: Path, shape: Shape, n: int, pairs: int,
              ratios: dict[str, list[float]]) -> None:
    for steps, onto in shape.targets:
        ctx = clone(fork, work / f"t{steps}", shape, onto)
        os.sync()
        cold = carry_loop(ctx, shape, "bench/cold")
        tidy(ctx, "bench/cold")
        os.sync()
        g = git_loop(ctx, shape, work / f"t{steps}" / "wt-git")
        os.sync()
        warm = carry_loop(ctx, shape, "bench/warm")
        tidy(ctx, "bench/warm")
        for which, c in (("cold", cold), ("warm", warm)):
            check(f"round {n}, target +{steps} {which}", c, g)
            key = f"+{steps} {which}"
            for name, v in ((f"{key}: carry loop s", c.total),
                            (f"{key}: carry first call s", c.first),
                            (f"{key}: loop / git loop", c.total / g.total),
                            (f"{key}: first call / git loop", c.first / g.total),
                            (f"{key}: loop / git loop, CPU", c.cpu / g.cpu),
                            (f"{key}: first call / git loop, CPU", c.first_cpu / g.cpu)):
                ratios.setdefault(name, []).append(v)
        ratios.setdefault(f"+{steps}: git loop s", []).append(g.total)
        ratios.setdefault(f"+{steps}: git loop CPU s", []).append(g.cpu)
        took, plain = worktree_cost(ctx, work / f"t{steps}" / "wt-add")
        for name, v in ((f"+{steps}: carry --resolve s", took),
                        (f"+{steps}: git worktree add s", plain),
                        (f"+{steps}: --resolve / git worktree add", took / plain)):
            ratios.setdefault(name, []).append(v)
        for which in ("cold", "warm"):  # every pair of every round, not a median of each
            key = f"+{steps} {which}"
            for wall, bare, busy, bare_busy in why_cost(ctx, which == "cold", pairs):
                for name, v in ((f"{key}: first call without why s", bare),
                                (f"{key}: why's cost to the first call s", wall - bare),
                                (f"{key}: why's cost / first call without it",
                                 (wall - bare) / bare),
                                (f"{key}: why's cost / first call without it, CPU",
                                 (busy - bare_busy) / bare_busy)):
                    ratios.setdefault(name, []).append(v)
        share, share_cpu = why_share(ctx)
        ratios.setdefault(f"+{steps}: why / replay it explains", []).append(share)
        ratios.setdefault(f"+{steps}: why / replay it explains, CPU", []).append(share_cpu)
        print(f"# round {n}, target +{steps} ({onto[:12]}): {g.outcome.count('stopped')} stops, "
              f"{g.outcome.count('applied')} applied, {g.outcome.count('dropped')} dropped, "
              f"same outcomes, trees and authors in all three loops; carry cold "
              f"{cold.total:.2f} s (first {cold.first:.2f}), warm {warm.total:.2f} s "
              f"(first {warm.first:.2f}), git {g.total:.2f} s", flush=True)


def real_fork() -> str:
    """`$CARRY_REAL_FORK`, the fetched fork's path; "" (with the one line saying so) when it
    is not set or not a folder, so a bench without it skips."""
    fork = os.environ.get("CARRY_REAL_FORK", "")
    if not fork or not Path(fork).is_dir():
        print("skipped: set CARRY_REAL_FORK to a copy of the vLLM fork (local-inference-lab/vllm)")
        return ""
    return fork


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--series", default="main", help="the fork branch the series ends at")
    ap.add_argument("--upstream", default=None, help="the upstream line's tip (default: found)")
    ap.add_argument("--targets", default="130,212",
                    help="first-parent steps after the series base, comma-separated")
    ap.add_argument("--pairs", type=int, default=4,
                    help="first calls with and without why, in pairs, per target and round")
    ap.add_argument("--work", type=Path, default=None, help="where the clones go (a temp dir)")
    args = ap.parse_args()
    fork = real_fork()
    if not fork:
        return
    shape = pick(fork, args.series, args.upstream, [int(x) for x in args.targets.split(",")])
    print(f"# fork {fork}: series {len(shape.series)} patches on {shape.base[:12]} "
          f"({args.series}); targets " + ", ".join(f"+{n} {sha[:12]}" for n, sha in shape.targets)
          + f"; git {run(['git', 'version'], fork).split()[-1]}, {os.cpu_count()} cores")
    # carry's bytecode, compiled once as an install does: with $PYTHONDONTWRITEBYTECODE set (as
    # on this machine) and no __pycache__, every call compiled ~170 modules, 0.15-0.2 s each.
    compileall.compile_dir(TOOLING, quiet=1)
    work = args.work or Path(tempfile.mkdtemp(prefix="carry-real-fork-"))
    ratios: dict[str, list[float]] = {}
    try:
        for n in range(1, args.repeat + 1):
            one_round(fork, work, shape, n, args.pairs, ratios)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    width = max(len(k) for k in ratios)
    print(f"\n{str(args.repeat) + ' rounds':<{width}}  {'min':>7} {'median':>7} {'max':>7}"
          f"  (why's cost: over all {args.repeat * args.pairs} pairs)")
    for k in sorted(ratios, key=lambda k: (k.split(":")[0], "/" in k, k)):
        xs = ratios[k]
        print(f"{k:<{width}}  {min(xs):7.2f} {statistics.median(xs):7.2f} {max(xs):7.2f}")
    print("\ngoals: loop / git loop at most 1.0x, first call / git loop at most 0.5x, cold and "
          "warm; why's cost at most 0.20 of the first call without it, cold and warm (its own "
          "time in one thread: why / replay it explains); --resolve at most 1.2x git worktree "
          "add")


if __name__ == "__main__":
    main()
