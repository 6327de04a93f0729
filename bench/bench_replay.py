"""The replay engine on the shapes real series have, side by side with raw git in one run.

For each layout and series length it builds (one `git fast-import`) a repository of --files
files, a series on `base` and an upstream `main` that moved by --upstream commits, some in the
series' files, so the replay does real three-way merges. Layouts:

- disjoint: every patch edits a file of its own (carry's best case: one merge for the run);
- fixup: every other patch is a follow-up that edits the file of the patch before it (the
  flagship's shape: four follow-ups on #556's two commits);
- overlap: every patch also edits one shared file, so no two patches can be batched.

Then it times, in turn within each round (so that a busy moment on a shared machine falls on
every measurement), medians of --repeat (at least 5) with min and max:

- carry's replay (the engine in-process, chain cache warm: what `carry rebase` does after it
  has started), and `carry rebase` through the CLI;
- the true lower bound for the merges carry runs: the very `git merge-tree` calls carry made
  (traced with $CARRY_TRACE_MERGES, with the tree each gave), run again as raw git processes,
  one after another, and checked to give the same trees;
- `git rebase --onto` in an existing worktree.

It checks that carry's result tree after every commit equals git rebase's, and prints the
cost per patch. --targets 2 also times one `carry rebase` of two targets against one target
(processes, one per core).

Usage: python bench/bench_replay.py [--files 20000 --patches 10,50,200 --repeat 5]
Quick: python bench/bench_replay.py --files 2000 --patches 10,50 --repeat 3 --layouts fixup
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rebase import (  # noqa: E402
    ENV,
    Stream,
    content,
    git,
    import_series,
    path_of,
)
from bench_rebase import timings as timed  # noqa: E402


def generate(root: Path, files: int, patches: int, upstream: int, layout: str) -> Path:
    """`base` (all files), `series` (the layout's patches on base), `main` (upstream)."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    s = Stream()
    base = s.commit("refs/heads/main", "base\n", {path_of(i): content(i, {}) for i in range(files)})
    s.parts.append(f"reset refs/tags/base\nfrom {base}\n\n".encode())
    step = max(1, files // max(patches, 1))
    owners = [(k * step + 7) % files for k in range(patches)]
    state: dict[int, dict[int, str]] = {}
    shared = files - 1
    for k in range(patches):
        i = owners[k - 1] if layout == "fixup" and k % 2 == 1 else owners[k]
        line = 3 if layout == "fixup" and k % 2 == 1 else 2
        edits = state.setdefault(i, {})
        edits[line] = f"patched {k}\n"
        changed = {path_of(i): content(i, edits)}
        if layout == "overlap":
            se = state.setdefault(shared, {})
            se[4 + k % 4] = f"shared {k}\n"
            changed[path_of(shared)] = content(shared, se)
        msg = f"carried patch {k}\n\nWhy.\n\nSigned-off-by: A U Thor <author@example.com>\n"
        s.commit("refs/heads/series", msg, changed, parent=base if k == 0 else None)
    for j in range(upstream):
        i = owners[(j // 10) % len(owners)] if j % 10 == 0 else (j * 7919 + 13) % (files - 1)
        s.commit("refs/heads/main", f"upstream change {j}\n",
                 {path_of(i): content(i, {9: f"upstream {j}\n"})}, parent=base if j == 0 else None)
    git(repo, "fast-import", "--quiet", input=s.bytes())
    git(repo, "repack", "-adq")
    git(repo, "reset", "-q", "--hard", "main")
    return repo


def fmt(times: list[float]) -> str:
    return (f"{statistics.median(times):7.3f} s  (min {min(times):.3f}, "
            f"max {max(times):.3f})")


def engine_once(repo: Path, series_root: Path, onto: str, trace: Path | None = None) -> str:
    """carry's replay in-process (chain warm), as `carry rebase` runs it; returns the head."""
    from carry.git import Repo
    from carry.replay.chain import load_chain
    from carry.replay.engine import replay_target
    from carry.replay.targets import ResolvedTarget
    from carry.series import store as series

    if trace:
        os.environ["CARRY_TRACE_MERGES"] = str(trace)
    r = Repo.open(repo)
    try:
        s = series.find(series_root, "bench")
        base, carried = load_chain(s, r)
        t = ResolvedTarget(onto, onto, r.rev_parse(onto))
        done = replay_target(s, r, base, carried, t, r.committer_ident())
        if done.stop is not None:
            raise SystemExit(f"carry stopped at patch {done.stop}: {done.paths}")
        return done.result.head
    finally:
        os.environ.pop("CARRY_TRACE_MERGES", None)
        r.close()


def replay_merges(repo: Path, merges: list[list[str]], outs: list[bytes]) -> None:
    """The merges carry ran, as raw git processes one after another; each one's output is
    kept in `outs` (read after the clock stops) to check that git gives carry's trees."""
    outs.clear()
    for ours, theirs, _ in merges:
        outs.append(subprocess.run(["git", "merge-tree", "--write-tree", "--name-only",
                                    "--no-messages", ours, theirs], cwd=repo,
                                   capture_output=True, check=False).stdout)


def interleaved(fns: dict[str, Callable[[], object]], repeat: int,
                setups: dict[str, Callable[[], object]]) -> dict[str, list[float]]:
    """Each measurement once per round, in turn, so that a busy moment on a shared machine
    falls on all of them rather than on one."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            times[k] += timed(fn, 1, setups.get(k))
    return times


def trees(repo: Path, rng: str) -> list[str]:
    return git(repo, "log", "--reverse", "--format=%T", rng).split()


def carry_cli(repo: Path, series_root: Path, *onto: str) -> None:
    args = [a for o in onto for a in ("--onto", o)]
    proc = subprocess.run(
        [sys.executable, "-m", "carry", "rebase", "bench", "--repo", str(repo), *args,
         "--series-dir", str(series_root), "--dry-run", "--json"],
        capture_output=True, env={**os.environ, **ENV})
    if proc.returncode != 0:
        raise SystemExit(f"carry rebase failed: {proc.stderr.decode()[:800]}")


def one(root: Path, layout: str, n: int, args: argparse.Namespace) -> None:
    repo = generate(root, args.files, n, args.upstream, layout)
    series_root = import_series(root, repo)
    engine_once(repo, series_root, "main")  # warm the chain cache and the OS cache
    trace = root / "merges.txt"
    head = engine_once(repo, series_root, "main", trace)
    merges = [line.split() for line in trace.read_text().splitlines()]
    wt = root / "wt"
    git(repo, "worktree", "add", "-q", "-b", "bench/rebase", str(wt), "series")
    git(wt, "rebase", "-q", "--onto", "main", "base")
    same = trees(repo, f"main..{head}") == trees(repo, "main..bench/rebase")
    outs: list[bytes] = []
    t = interleaved({
        "carry": lambda: engine_once(repo, series_root, "main"),
        "low": lambda: replay_merges(repo, merges, outs),
        "cli": lambda: carry_cli(repo, series_root, "main"),
        "rebase": lambda: git(wt, "rebase", "-q", "--onto", "main", "base"),
    }, args.repeat, {"rebase": lambda: git(wt, "reset", "-q", "--hard", "series")})
    bound_same = [o.split(b"\n", 1)[0].decode() for o in outs] == [m[2] for m in merges]
    med = statistics.median
    carry_t, low_t = t["carry"], t["low"]
    print(f"\n## {layout}, {n} patches ({len(merges)} merges carry ran; per-commit trees equal "
          f"to git rebase: {'yes' if same else 'NO'}; raw git's merges give carry's trees: "
          f"{'yes' if bound_same else 'NO'})")
    print(f"  carry replay (in-process)      {fmt(carry_t)}   {med(carry_t) / n * 1000:6.2f} "
          "ms/patch")
    print(f"  carry rebase --dry-run (CLI)   {fmt(t['cli'])}")
    print(f"  lower bound: carry's merges    {fmt(low_t)}   ratio {med(carry_t) / med(low_t):.2f}x"
          f" (min/min {min(carry_t) / min(low_t):.2f}x)")
    print(f"  git rebase --onto (worktree)   {fmt(t['rebase'])}   ratio "
          f"{med(carry_t) / med(t['rebase']):.2f}x")
    if not (same and bound_same):
        raise SystemExit("carry's trees differ from git rebase's, or raw git's merges from carry's")
    if args.targets > 1:
        git(repo, "branch", "-f", "main2", "main~1")
        onto = ["main", "main2", "main~2", "main~3"][:args.targets]
        tt = interleaved({"one": lambda: carry_cli(repo, series_root, "main"),
                          "many": lambda: carry_cli(repo, series_root, *onto)}, args.repeat, {})
        one_t, many_t = tt["one"], tt["many"]
        print(f"  carry rebase, 1 target (CLI)   {fmt(one_t)}")
        print(f"  carry rebase, {len(onto)} targets (CLI)  {fmt(many_t)}   ratio "
              f"{med(many_t) / med(one_t):.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--patches", default="10,50,200")
    ap.add_argument("--upstream", type=int, default=500)
    ap.add_argument("--layouts", default="disjoint,fixup,overlap")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--targets", type=int, default=1)
    args = ap.parse_args()
    os.environ.update(ENV)
    print(f"# {args.files} files, base moved by {args.upstream} commits, git "
          f"{subprocess.run(['git', 'version'], capture_output=True, text=True).stdout.split()[-1]}"
          f", {os.cpu_count()} cores, medians of {args.repeat}")
    for layout in args.layouts.split(","):
        for n in (int(x) for x in args.patches.split(",")):
            root = Path(tempfile.mkdtemp(prefix="carry-bench-replay-"))
            try:
                one(root, layout, n, args)
            finally:
                shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
