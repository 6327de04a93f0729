"""Replay a series onto a moved base: carry rebase against raw git, in one run.

Builds (with one `git fast-import`) a repository of --files files, a series of --patches
commits on its base, and an upstream that moved by --upstream commits, some of them in the
series' files, so the replay does real three-way merges. Then it times, on the same repo:

- carry rebase (the CLI, as a user runs it), with a warm chain cache and with a cold one;
- the merge-tree lower bound: a plain plumbing loop (commit-tree graft, merge-tree,
  commit-tree per patch; facts.md's 2.39 recipe) with the series already as commits;
- `git rebase --onto` in an existing worktree, and `git am -3` of the series' patch files both
  in an existing worktree and in a fresh one (`git worktree add` timed with it).

Min, median and max of --repeat runs each. Before it prints, it checks that the tree after every
commit is the same in carry's branch, the lower bound's chain, git rebase's and git am's.

Usage: python bench/bench_rebase.py [--files 100000 --patches 50 --upstream 500 --repeat 5]
Quick: python bench/bench_rebase.py --files 5000 --patches 10 --upstream 50 --repeat 1
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
from collections.abc import Callable
from pathlib import Path

TOOLING = str(Path(__file__).resolve().parents[1] / "tooling")
sys.path.insert(0, TOOLING)  # bench this checkout, whatever carry is installed
AUTHOR = "A U Thor <author@example.com>"
LINES = 12  # per file; patches edit line 2, upstream edits line 9: clean but real merges
ENV = {"PYTHONPATH": TOOLING, "GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMITTER_NAME": "Bench",
       "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_AUTHOR_NAME": "A U Thor",
       "GIT_AUTHOR_EMAIL": "author@example.com"}


def git(repo: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None
        ) -> str:
    full = {**os.environ, **ENV, **(env or {})}
    proc = subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True, env=full)
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args[:3])} failed: {proc.stderr.decode()[:500]}")
    return proc.stdout.decode().strip()


def path_of(i: int, width: int = 100) -> str:
    return f"d{i // width:04d}/f{i % width:03d}.txt"


def content(i: int, edits: dict[int, str]) -> bytes:
    lines = [f"file {i} line {n}\n" for n in range(LINES)]
    for n, text in edits.items():
        lines[n] = text
    return "".join(lines).encode()


class Stream:
    """A fast-import stream with marks, so thousands of commits cost one process."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.mark = 0
        self.clock = 1_700_000_000

    def data(self, payload: bytes) -> None:
        self.parts.append(b"data %d\n" % len(payload) + payload + b"\n")

    def commit(self, ref: str, message: str, files: dict[str, bytes],
               parent: str | None = None, author: str = AUTHOR) -> str:
        self.mark += 1
        self.clock += 60
        self.parts.append(f"commit {ref}\nmark :{self.mark}\n"
                          f"author {author} {self.clock} +0200\n"
                          f"committer Bench <bench@example.com> {self.clock} +0000\n".encode())
        self.data(message.encode())
        if parent:
            self.parts.append(f"from {parent}\n".encode())
        for name, payload in files.items():
            self.parts.append(f"M 100644 inline {name}\n".encode())
            self.data(payload)
        self.parts.append(b"\n")
        return f":{self.mark}"

    def bytes(self) -> bytes:
        return b"".join(self.parts)


def generate(root: Path, files: int, patches: int, upstream: int, drops: int = 0) -> Path:
    """The repository: `base` (all files), `series` (patches on base), `main` (upstream)."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Bench")
    git(repo, "config", "user.email", "bench@example.com")
    s = Stream()
    base = s.commit("refs/heads/main", "base\n", {path_of(i): content(i, {}) for i in range(files)})
    s.parts.append(f"reset refs/tags/base\nfrom {base}\n\n".encode())
    step = max(1, files // max(patches, 1))
    targets = [(k * step + 7) % files for k in range(patches)]
    prev = base
    for k, i in enumerate(targets):
        msg = (f"carried patch {k}\n\nWhy this patch exists.\n\n"
               f"Signed-off-by: {AUTHOR}\n")
        prev = s.commit("refs/heads/series", msg, {path_of(i): content(i, {2: f"patched {k}\n"})},
                        parent=prev if k == 0 else None)
    prev = base
    for j in range(upstream):
        if j < drops:  # upstream took some patches as they are: patch-id drops
            i = targets[j]
            files_ = {path_of(i): content(i, {2: f"patched {j}\n"})}
        elif j % 10 == 0 and targets:  # touch a carried file elsewhere: a real merge
            i = targets[(j // 10) % len(targets)]
            files_ = {path_of(i): content(i, {9: f"upstream {j}\n"})}
        else:
            i = (j * 7919 + 13) % files
            files_ = {path_of(i): content(i, {9: f"upstream {j}\n"})}
        prev = s.commit("refs/heads/main", f"upstream change {j}\n", files_,
                        parent=prev if j == 0 else None)
    git(repo, "fast-import", "--quiet", input=s.bytes())
    git(repo, "repack", "-adq")
    git(repo, "reset", "-q", "--hard", "main")
    return repo


def import_series(root: Path, repo: Path) -> Path:
    from carry.intake import importer

    series_root = root / "series"
    series_root.mkdir()
    importer.run(series_root, "bench",
        importer.Source(str(repo), branch="series", base="base"), title="Benchmark series")
    return series_root


def timings(fn: Callable[[], object], repeat: int,
            setup: Callable[[], object] | None = None) -> list[float]:
    times = []
    for _ in range(repeat):
        if setup:
            setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def lower_bound(repo: Path, onto: str) -> str:
    """The plain plumbing loop: three git processes per patch, nothing else."""
    log = git(repo, "log", "--reverse", "--format=%H %P", "base..series").splitlines()
    head = git(repo, "rev-parse", onto)
    tree = git(repo, "rev-parse", f"{onto}^{{tree}}")
    env = {"GIT_AUTHOR_NAME": "A U Thor", "GIT_AUTHOR_EMAIL": "author@example.com",
           "GIT_AUTHOR_DATE": "@1700000000 +0200"}
    for line in log:
        commit, parent = line.split()[:2]
        graft = git(repo, "commit-tree", tree, "-p", parent, "-m", "graft", env=env)
        tree = git(repo, "merge-tree", "--write-tree", graft, commit).splitlines()[0]
        head = git(repo, "commit-tree", tree, "-p", head, "-m", "patch", env=env)
    return head


def carry_cli(series_root: Path, repo: Path, onto: str, branch: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "carry", "rebase", "bench", "--repo", str(repo), "--onto", onto,
         "--series-dir", str(series_root), "--branch", branch, "--json"],
        capture_output=True, env={**os.environ, **ENV})
    if proc.returncode != 0:
        raise SystemExit(f"carry rebase failed: {proc.stderr.decode()[:800]}")


def drop_cache(repo: Path) -> None:
    for ref in git(repo, "for-each-ref", "--format=%(refname)", "refs/carry/cache/").split():
        git(repo, "update-ref", "-d", ref)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--patches", type=int, default=50)
    ap.add_argument("--upstream", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="build in this directory and keep it")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="carry-bench-"))
    try:
        run(root, args)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def trees(repo: Path, since: str, head: str) -> list[str]:
    """The tree after every commit of since..head, oldest first: what the outputs must share."""
    return git(repo, "log", "--reverse", "--format=%T", f"{since}..{head}").split()


def spread(xs: list[float]) -> str:
    return f"{min(xs):8.3f} {statistics.median(xs):8.3f} {max(xs):8.3f}"


def run(root: Path, args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    repo, series_root = root / "repo", root / "series"
    if not repo.exists():  # --keep DIR reuses what an earlier run built there
        generate(root, args.files, args.patches, args.upstream)
        import_series(root, repo)
    for wt in root.glob("wt-*"):
        git(repo, "worktree", "remove", "--force", str(wt))
    for ref in git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/bench/").split():
        git(repo, "update-ref", "-d", ref)
    print(f"# repo: {args.files} files, {args.patches} patches, base moved by {args.upstream} "
          f"commits (ready in {time.perf_counter() - t0:.1f}s, git "
          f"{git(repo, 'version').split()[-1]}, {os.cpu_count()} cores)")
    n = [0]

    def branch() -> str:
        n[0] += 1
        return f"bench/carry-{n[0]}"

    wt_rebase, wt_am = root / "wt-rebase", root / "wt-am"
    git(repo, "worktree", "add", "-q", "-b", "bench/rebase", str(wt_rebase), "series")
    git(repo, "worktree", "add", "-q", "-b", "bench/am", str(wt_am), "main")
    patch_files = sorted(str(p) for p in (series_root / "bench" / "patches").iterdir())
    counter = [0]

    def am_fresh() -> None:
        counter[0] += 1
        fresh = root / f"wt-am-{counter[0]}"
        git(repo, "worktree", "add", "-q", "--detach", str(fresh), "main")
        git(fresh, "am", "-q", "-3", *patch_files)

    heads: dict[str, str] = {}

    def lower() -> None:
        heads["lower"] = lower_bound(repo, "main")

    results: dict[str, list[float]] = {}
    results["carry rebase, cold cache (CLI)"] = timings(
        lambda: carry_cli(series_root, repo, "main", branch()), args.repeat,
        setup=lambda: drop_cache(repo))
    results["carry rebase, warm cache (CLI)"] = timings(
        lambda: carry_cli(series_root, repo, "main", branch()), args.repeat)
    results["carry --help (interpreter start)"] = timings(
        lambda: subprocess.run([sys.executable, "-m", "carry", "--help"], capture_output=True,
                               check=True), args.repeat)
    results["merge-tree lower bound (plumbing loop)"] = timings(lower, args.repeat)
    results["git rebase --onto (existing worktree)"] = timings(
        lambda: git(wt_rebase, "rebase", "-q", "--onto", "main", "base"), args.repeat,
        setup=lambda: git(wt_rebase, "reset", "-q", "--hard", "series"))
    results["git am -3 (existing worktree)"] = timings(
        lambda: git(wt_am, "am", "-q", "-3", *patch_files), args.repeat,
        setup=lambda: git(wt_am, "reset", "-q", "--hard", "main"))
    results["git worktree add + git am -3 (fresh worktree)"] = timings(am_fresh, args.repeat)

    want = trees(repo, "main", "bench/rebase")
    outputs = {"carry rebase": trees(repo, "main", f"bench/carry-{n[0]}"),
               "lower bound": trees(repo, "main", heads["lower"]),
               "git am -3": trees(repo, "main", "bench/am")}
    for name, got in outputs.items():
        if got != want:
            raise SystemExit(f"{name}'s per-commit trees differ from git rebase's")
    print(f"outputs checked: {len(want)} per-commit trees equal across carry, the lower bound, "
          "git rebase and git am -3")
    width = max(len(k) for k in results)
    print(f"{'measurement':<{width}}  seconds:  min   median      max  ({args.repeat} runs)")
    for k, xs in results.items():
        print(f"{k:<{width}}  {spread(xs)}")
    med = {k: statistics.median(xs) for k, xs in results.items()}
    warm, cold = med["carry rebase, warm cache (CLI)"], med["carry rebase, cold cache (CLI)"]
    low = med["merge-tree lower bound (plumbing loop)"]
    print(f"ratio carry(warm) / lower bound     = {warm / low:5.2f}x")
    print(f"ratio carry(cold) / lower bound     = {cold / low:5.2f}x")
    for label in ("git rebase --onto (existing worktree)", "git am -3 (existing worktree)",
                  "git worktree add + git am -3 (fresh worktree)"):
        print(f"speed-up vs {label:<46} = {med[label] / warm:5.1f}x warm, "
              f"{med[label] / cold:5.1f}x cold")


if __name__ == "__main__":
    main()
