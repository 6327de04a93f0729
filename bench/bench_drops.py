"""Upstream-drop detection over a long upstream range: carry against `git cherry`, in one run.

Generates (one `git fast-import`) a repository of --files files, a series of --patches
commits, and --upstream upstream commits of which the first --drops take series patches as
they are. Then it times, alternating runs so that load from other processes hits both alike:

- carry's drop detection (`carry.replay.drops.find_drops`: patch-ids, trailers, provenance), with
  the series' chain already cached as commits, so only detection is measured;
- `git cherry main <series>`, which finds the same patch-id drops and nothing else.

Cold runs search the whole range (`remember=False`). Then, as in daily use, upstream moves on
by --moved commits at a time and carry's remembered search only looks at the new ones, while
`git cherry` has to look at the whole range again.

Usage: python bench/bench_drops.py [--files 100000 --patches 50 --upstream 10000 --repeat 5]
Quick: python bench/bench_drops.py --files 2000 --patches 20 --upstream 1000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_rebase import ENV, Stream, content, generate, git, import_series, path_of  # noqa: E402,E501


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--patches", type=int, default=50)
    ap.add_argument("--upstream", type=int, default=10_000)
    ap.add_argument("--drops", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--moved", type=int, default=20, help="upstream commits per daily step")
    ap.add_argument("--keep", type=Path, help="build in this directory and keep it")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="carry-bench-drops-"))
    try:
        run(root, args)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def run(root: Path, args: argparse.Namespace) -> None:
    os.environ.update(ENV)
    from carry.git import Repo
    from carry.replay.chain import load_chain
    from carry.replay.drops import find_drops
    from carry.series import store as series

    t0 = time.perf_counter()
    repo_path = root / "repo"
    if not repo_path.exists():
        generate(root, args.files, args.patches, args.upstream, drops=args.drops)
        import_series(root, repo_path)
    s = series.find(root / "series", "bench")
    repo = Repo.open(repo_path)
    base, carried = load_chain(s, repo)  # the chain cache, as a daily rebase has it
    head = carried[-1].commit.sha
    by_number = {c.number: c.commit.sha for c in carried}
    count = git(repo_path, "rev-list", "--count", "main", "^base")
    print(f"# {args.files} files, {len(carried)} patches, {count} upstream commits "
          f"(ready in {time.perf_counter() - t0:.1f}s, git {git(repo_path, 'version').split()[-1]},"
          f" {os.cpu_count()} cores)")
    def cherry() -> tuple[float, set[str]]:
        start = time.perf_counter()
        out = subprocess.run(["git", "cherry", "main", head], cwd=repo_path,
                             capture_output=True, check=True).stdout.decode()
        return time.perf_counter() - start, {ln[2:] for ln in out.splitlines() if ln[:1] == "-"}

    def carry(remember: bool) -> tuple[float, set[str]]:
        start = time.perf_counter()
        fresh = Repo.open(repo_path)
        found = find_drops(fresh, carried, base, fresh.rev_parse("main"),
                                    s.manifest.provenance, remember=remember)
        fresh.close()
        return time.perf_counter() - start, {by_number[n] for n in found}

    Runs = list[tuple[float, set[str]]]

    def report(label: str, ours: Runs, theirs: Runs) -> None:
        a, b = [t for t, _ in ours], [t for t, _ in theirs]
        print(f"{label}: carry median {statistics.median(a):.3f}s (min {min(a):.3f}s, "
              f"{len(ours[-1][1])} drops)  git cherry median {statistics.median(b):.3f}s "
              f"(min {min(b):.3f}s, {len(theirs[-1][1])} drops, the same)  ratio "
              f"{statistics.median(a) / statistics.median(b):.2f}x median, "
              f"{min(a) / min(b):.2f}x best   (goal <= 1.0x)")
        if ours[-1][1] != theirs[-1][1]:  # the series has no trailer or provenance drops
            raise SystemExit("carry and git cherry found different drops")

    cold_carry, cold_cherry = [], []
    for _ in range(args.repeat):  # alternate, so that load from elsewhere hits both alike
        cold_carry.append(carry(remember=False))
        cold_cherry.append(cherry())
    report(f"cold, {count} commits", cold_carry, cold_cherry)
    carry(remember=True)  # yesterday's search, remembered
    daily_carry, daily_cherry = [], []
    for step in range(args.repeat):
        move(repo_path, args.files, args.moved, step)
        daily_carry.append(carry(remember=True))
        daily_cherry.append(cherry())
    report(f"daily, main moved by {args.moved} commits each time", daily_carry, daily_cherry)


def move(repo: Path, files: int, n: int, step: int) -> None:
    """Append n upstream commits to main in one fast-import."""
    st = Stream()
    st.clock = 1_800_000_000 + step * 10_000
    parent: str | None = git(repo, "rev-parse", "main")
    for j in range(n):
        i = (step * 7919 + j * 104729 + 3) % files
        st.commit("refs/heads/main", f"later upstream {step}.{j}\n",
                  {path_of(i): content(i, {9: f"later {step}.{j}\n"})}, parent=parent)
        parent = None
    git(repo, "fast-import", "--quiet", input=st.bytes())


if __name__ == "__main__":
    main()
