"""Upstream-drop detection over a long upstream range: carry against `git cherry`, in one run.

Generates (one `git fast-import`) a repository of --files files, a series of --patches
commits, and --upstream upstream commits of which the first --drops take series patches as
they are. Then it times, alternating runs so that load from other processes hits both alike:

- carry's drop detection (`carry.upstream.find_drops`: patch-ids, trailers, provenance), with
  the series' chain already cached as commits, so only detection is measured;
- `git cherry main <series>`, which finds the same patch-id drops and nothing else.

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

from bench_rebase import ENV, generate, git, import_series  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--patches", type=int, default=50)
    ap.add_argument("--upstream", type=int, default=10_000)
    ap.add_argument("--drops", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
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
    from carry import rebase, series, upstream
    from carry.git import Repo

    t0 = time.perf_counter()
    repo_path = root / "repo"
    if not repo_path.exists():
        generate(root, args.files, args.patches, args.upstream, drops=args.drops)
        import_series(root, repo_path)
    s = series.find(root / "series", "bench")
    repo = Repo.open(repo_path)
    base, carried = rebase.load_chain(s, repo)  # the chain cache, as a daily rebase has it
    head = carried[-1].commit.sha
    target = repo.rev_parse("main")
    count = git(repo_path, "rev-list", "--count", "main", "^base")
    print(f"# {args.files} files, {len(carried)} patches, {count} upstream commits "
          f"(ready in {time.perf_counter() - t0:.1f}s, git {git(repo_path, 'version').split()[-1]},"
          f" {os.cpu_count()} cores)")
    carry_times, cherry_times = [], []
    found: dict[int, upstream.Drop] = {}
    cherry_out = ""
    for _ in range(args.repeat):
        start = time.perf_counter()
        fresh = Repo.open(repo_path)
        found = upstream.find_drops(fresh, carried, base, target, s.manifest.provenance)
        fresh.close()
        carry_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        cherry_out = subprocess.run(["git", "cherry", "main", head], cwd=repo_path,
                                    capture_output=True, check=True).stdout.decode()
        cherry_times.append(time.perf_counter() - start)
    cherry_drops = sum(1 for ln in cherry_out.splitlines() if ln.startswith("-"))
    carry_med, cherry_med = statistics.median(carry_times), statistics.median(cherry_times)
    print(f"carry find_drops   median {carry_med:.3f}s  (min {min(carry_times):.3f}s)  "
          f"drops found: {len(found)}")
    print(f"git cherry         median {cherry_med:.3f}s  (min {min(cherry_times):.3f}s)  "
          f"drops found: {cherry_drops}")
    print(f"ratio carry / git cherry = {carry_med / cherry_med:.2f}x median, "
          f"{min(carry_times) / min(cherry_times):.2f}x best   (goal <= 1.0x)")
    if len(found) < cherry_drops:
        raise SystemExit("carry found fewer drops than git cherry")


if __name__ == "__main__":
    main()
