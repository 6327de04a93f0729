"""`carry rebase --furthest` on real vLLM history, against a brute-force scan and raw git.

The fork's path comes from $CARRY_REAL_FORK (a clone or bare repository); without it the bench
says so in one line and exits 0. The series and the upstream line are bench_real_fork.py's
(`pick`): the fork's own commits on `--series` (default `main`) since their merge-base B with
the upstream line, and that line's first-parent commits past B (212 on the public fork). Each
`--patches` size K takes the series' first K patches (a shorter series goes further).

For each size, on a fresh clone (hard links, untimed, `carry init` and `carry import`):

- carry: `carry rebase bench --onto upstream/main --furthest --dry-run --json` through the
  CLI, `--repeat` times (the first builds the chain cache: cold);
- brute force: carry's own in-memory probe (`replay.furthest.prober`: drop detection and the
  replay, no forecast) at every first-parent commit (`--stride 1`, the default) or every
  `--stride`-th, plus the found commit and the next; it checks that the bisection's answer is
  the last commit that replays before the first that stops (so no earlier commit stops:
  "once blocked, stays blocked" on this history, or says where it does not hold);
- raw git: `git rebase --onto C B SERIES` in one worktree at `--git-sample` evenly spaced
  commits plus the found commit and the next: git must apply the series wherever carry's probe
  does and stop where it stops, on the same patch.

Usage: CARRY_REAL_FORK=/path/to/vllm.git python bench/bench_furthest.py [--patches 53,8,3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_conflicts import NAME, TOOLING, Ctx, carry, git, rebase_args  # noqa: E402
from bench_real_fork import ONTO_REF, Shape, clone, pick, real_fork, run  # noqa: E402

sys.path.insert(0, TOOLING)


def carry_furthest(ctx: Ctx, repeat: int) -> tuple[dict, list[float]]:
    times, doc = [], {}
    for _ in range(repeat):
        t0 = time.perf_counter()
        code, out = carry(ctx, *rebase_args(ctx, "--onto", ONTO_REF, "--furthest", "--dry-run",
                                            "--json"), ok=(0, 1))
        times.append(time.perf_counter() - t0)
        [doc] = json.loads(out)
        if code != (1 if doc["furthest"]["reach"] == "none" else 0):
            raise SystemExit(f"carry rebase --furthest exited {code} for {doc['furthest']}")
    return doc["furthest"], times


def brute(ctx: Ctx, line: list[str], picks: list[int]) -> tuple[dict[int, str], list[float]]:
    """carry's in-memory probe at each index of `picks`: "" where the series replays, else
    the file of the patch that stops it."""
    from carry.git import Repo
    from carry.replay import furthest
    from carry.replay.chain import load_chain
    from carry.series import store

    os.environ.update({k: v for k, v in ctx.env.items() if k.startswith("GIT_")})
    repo = Repo(ctx.repo)
    series = store.find(ctx.series, NAME)
    base, carried = load_chain(series, repo)
    probe = furthest.prober(series, repo, base, carried, repo.committer_ident())
    said, times = {}, []
    for i in picks:
        t0 = time.perf_counter()
        stop = probe(line[i])
        times.append(time.perf_counter() - t0)
        said[i] = stop[0] if stop else ""
    repo.close()
    return said, times


def git_scan(ctx: Ctx, shape: Shape, line: list[str], picks: list[int], wt: Path
             ) -> tuple[dict[int, str], list[float]]:
    """`git rebase --onto C base SERIES` at each pick, in one worktree: "" where it finishes,
    else the patch file number (NNNN) it stops on."""
    index = {sha: i + 1 for i, sha in enumerate(shape.series)}
    git(ctx, "worktree", "add", "-q", "--detach", str(wt), line[picks[0]])
    said, times = {}, []
    try:
        for i in picks:
            t0 = time.perf_counter()
            proc = subprocess.run(["git", "rebase", "-q", "--onto", line[i], "base",
                                   shape.series[-1]], cwd=wt, capture_output=True, env=ctx.env)
            times.append(time.perf_counter() - t0)
            if proc.returncode == 0:
                said[i] = ""
                continue
            head = subprocess.run(["git", "rev-parse", "-q", "--verify", "REBASE_HEAD"], cwd=wt,
                                  capture_output=True, text=True, env=ctx.env).stdout.strip()
            if head not in index:
                raise SystemExit(f"git rebase onto {line[i][:12]} failed: "
                                 f"{proc.stderr.decode()[:500]}")
            said[i] = f"{index[head]:04d}"
            subprocess.run(["git", "rebase", "--abort"], cwd=wt, capture_output=True,
                           env=ctx.env, check=True)
    finally:
        git(ctx, "worktree", "remove", "--force", str(wt))
    return said, times


def stats(xs: list[float]) -> str:
    return f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f} s"


def one_size(fork: str, work: Path, shape: Shape, line: list[str], k: int,
             args: argparse.Namespace) -> None:
    sub = Shape(shape.base, shape.series[:k], [(len(line), line[-1])])
    ctx = clone(fork, work / f"k{k}", sub, line[-1])
    f, times = carry_furthest(ctx, args.repeat)
    at = f["steps"] - 1  # index of the found commit in `line`; -1: nothing moves
    near = [i for i in (at, at + 1) if 0 <= i < len(line)]
    picks = sorted(set(range(args.stride - 1, len(line), args.stride)) | set(near))
    said, probe_times = brute(ctx, line, picks)
    passing = [i for i in picks if not said[i]]
    first_stop = next((i for i in picks if said[i]), len(line))
    regained = [i for i in passing if i > first_stop]
    agree = all(not said[i] for i in picks if i <= at) and \
        (at + 1 >= len(line) or said[at + 1] == f["blocker"]["patch"])
    scan_last = first_stop - 1 if first_stop < len(line) else len(line) - 1
    b = f["blocker"]
    blocked = f"blocked by {b['commit']['sha'][:12]} (#{b['commit']['pr']}) on {b['patch']}" \
        if b else "nothing blocks"
    print(f"## {k} patches: furthest {f['reach']}, {f['steps']} of {f['total']} commits "
          f"(onto {f['onto']['sha'][:12]} {f['onto']['subject'][:60]!r}); {blocked}; "
          f"{f['probes']} probes", flush=True)
    print(f"   carry --furthest (CLI, {args.repeat} runs) min / median / max: {stats(times)};"
          f" the first (cold: chain cache built) {times[0]:.2f} s")
    print(f"   brute force: {len(picks)} probes of carry's in-memory replay, {stats(probe_times)}"
          f" each, {sum(probe_times):.1f} s in all (all {len(line)} commits: about "
          f"{statistics.median(probe_times) * len(line):.0f} s)")
    verdict = "same" if agree and (args.stride > 1 or scan_last == at) else "DIFFERENT"
    print(f"   scan: first stop at step {first_stop + 1}, last replaying step before it "
          f"{scan_last + 1}; bisection {at + 1}: {verdict}; replays again after the first "
          f"stop at {len(regained)} of the probed commits"
          + (f" (steps {', '.join(str(i + 1) for i in regained[:10])})" if regained else
             " (monotonic on this history)"))
    if verdict != "same":
        raise SystemExit("the bisection and the scan disagree")
    if args.git_sample:
        gpicks = sorted({round(j * (len(line) - 1) / max(args.git_sample - 1, 1))
                         for j in range(args.git_sample)} | set(near))
        carry_said, _ = brute(ctx, line, gpicks)
        git_said, git_times = git_scan(ctx, sub, line, gpicks, work / f"k{k}" / "wt")
        diff = [(i + 1, carry_said[i], git_said[i]) for i in gpicks
                if carry_said[i][:4] != git_said[i]]
        print(f"   raw git: `git rebase --onto C base SERIES` at {len(gpicks)} commits, "
              f"{stats(git_times)} each (all {len(line)}: about "
              f"{statistics.median(git_times) * len(line):.0f} s); "
              + ("same outcome and stopping patch as carry at each" if not diff else
                 f"DIFFERENT at steps {diff}"), flush=True)
        if diff:
            raise SystemExit("git and carry disagree")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", default="main", help="the fork branch the series ends at")
    ap.add_argument("--upstream", default=None, help="the upstream line's tip (default: found)")
    ap.add_argument("--patches", default="53,8,3", help="series sizes (first K patches)")
    ap.add_argument("--repeat", type=int, default=3, help="carry --furthest runs per size")
    ap.add_argument("--stride", type=int, default=1, help="brute force every N-th commit")
    ap.add_argument("--git-sample", type=int, default=6, help="commits raw git rebases onto")
    ap.add_argument("--work", type=Path, default=None, help="where the clones go (a temp dir)")
    args = ap.parse_args()
    fork = real_fork()
    if not fork:
        return
    shape = pick(fork, args.series, args.upstream, [10**9])
    line = run(["git", "rev-list", "--first-parent", "--reverse",
                f"{shape.base}..{shape.targets[0][1]}"], fork).split()
    print(f"# fork {fork}: series {len(shape.series)} patches on {shape.base[:12]} "
          f"({args.series}); upstream line {len(line)} first-parent commits to "
          f"{line[-1][:12]}; git {run(['git', 'version'], fork).split()[-1]}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}", flush=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="carry-furthest-"))
    try:
        for k in [int(x) for x in args.patches.split(",")]:
            one_size(fork, work, shape, line, min(k, len(shape.series)), args)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
