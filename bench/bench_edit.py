"""Changing one patch of a 50-patch series, on a repository that looks like vLLM: `carry edit`
against `git rebase -i`'s `edit`, in one run.

The repository and series are bench_conflicts.py's (about 5,000 files, a 50-patch series by
two authors with fixups, cached in --cache). Each round changes patch --patch the way a
maintainer does: a new file in it, and a `Reviewed-by:` trailer added to its message with
`git commit --amend`. Then every later patch is replayed on it.

- carry: `carry edit bench N --json` (the series replayed onto its base, a worktree at patch
  N), the amend in that worktree, `carry rebase --continue` (the later patches replayed, the
  series written as its next version, the branch `carry/bench/base` moved);
- git: `git worktree add` at the series' tip, `git rebase -i base` with `edit` on line N, the
  same amend, `git rebase --continue`.

Every round checks that both give the same commits: for each, its tree, author line and
message (committers differ by design), and that carry's written patch N holds the new trailer
and file with the original author and date. The series folder is put back after each round,
so every round edits the same version. Timed in turn, `sync` before each.

Usage: python bench/bench_edit.py [--repeat 5] [--patch 10] [--small]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench_conflicts import NAME, SERIES_REF, SMALL, Ctx, carry, git, prepared, tidy
from conflicts_repo import Params

TRAILER = "Reviewed-by: R E Viewer <reviewer@example.com>"
NOTE = "bench_edit_note.txt"


def amend(ctx: Ctx, wt: Path) -> None:
    """What the maintainer does at the stop: a file, a trailer, one `commit --amend`."""
    (wt / NOTE).write_text("edited in place\n")
    git(ctx, "add", NOTE, cwd=wt)
    message = git(ctx, "log", "-1", "--format=%B", "HEAD", cwd=wt).rstrip("\n")
    git(ctx, "commit", "-q", "--amend", "-m", f"{message}\n{TRAILER}", cwd=wt)


def commits(ctx: Ctx, head: str, cwd: Path | None = None) -> list[tuple[str, str, str]]:
    """(tree, author line, message) of each commit of base..head: all that an edit keeps."""
    out = git(ctx, "log", "--reverse", "-z", "--format=%T%x00%an <%ae> %ad%x00%B",
              "--date=raw", f"base..{head}", cwd=cwd).split("\0")
    rows = [tuple(out[i:i + 3]) for i in range(0, len(out) - 2, 3)]
    return [(t, a, m.strip("\n")) for t, a, m in rows]


def carry_edit(ctx: Ctx, number: int) -> tuple[float, float, list[tuple[str, str, str]]]:
    t0 = time.perf_counter()
    _, text = carry(ctx, "edit", NAME, str(number), "--repo", str(ctx.repo), "--series-dir",
                    str(ctx.series), "--json")
    first = time.perf_counter() - t0
    stop = json.loads(text)
    amend(ctx, Path(stop["worktree"]))
    carry(ctx, "rebase", "--continue", "--repo", str(ctx.repo), "--series-dir", str(ctx.series))
    total = time.perf_counter() - t0
    return total, first, commits(ctx, stop["branch"])


def git_edit(ctx: Ctx, number: int, wt: Path) -> tuple[float, list[tuple[str, str, str]]]:
    env = {**ctx.env, "GIT_SEQUENCE_EDITOR": f"sed -i '{number}s/^pick /edit /'"}
    t0 = time.perf_counter()
    git(ctx, "worktree", "add", "-q", "--detach", str(wt), SERIES_REF)
    proc = _run(ctx, ["rebase", "-i", "base"], wt, env)
    if "Stopped at" not in proc:
        raise SystemExit(f"git rebase -i did not stop to edit: {proc[:500]}")
    amend(ctx, wt)
    _run(ctx, ["rebase", "--continue"], wt, env)
    total = time.perf_counter() - t0
    return total, commits(ctx, "HEAD", wt)


def _run(ctx: Ctx, args: list[str], cwd: Path, env: dict[str, str]) -> str:
    import subprocess

    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"git {args[0]} failed: {(proc.stderr + proc.stdout)[:500]}")
    return proc.stderr + proc.stdout


def check(ctx: Ctx, number: int, c: list[tuple[str, str, str]],
          g: list[tuple[str, str, str]]) -> None:
    if c != g:
        bad = next(i for i, (x, y) in enumerate(zip(c + [("", "", "")], g + [("", "", "")],
                                                    strict=False)) if x != y)
        raise SystemExit(f"carry's and git's commits differ from commit {bad + 1}: "
                         f"{c[bad:bad + 1]} vs {g[bad:bad + 1]}")
    edited = c[number - 1]
    if not edited[2].endswith(TRAILER):
        raise SystemExit(f"patch {number} lost its new trailer: {edited[2][-200:]!r}")
    patch = next((ctx.series / NAME / "patches").glob(f"{number:04d}-*.patch")).read_text()
    if TRAILER not in patch or f"+++ b/{NOTE}" not in patch:
        raise SystemExit(f"series/{NAME}/patches/{number:04d}-* does not hold the edit")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="counted rounds (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="rounds run first, not counted")
    ap.add_argument("--patch", type=int, default=10, help="the patch to edit (default 10)")
    ap.add_argument("--small", action="store_true", help="bench_conflicts' small preset")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "carry-bench")
    args = ap.parse_args()
    params = SMALL if args.small else Params()
    with prepared(params, args.cache) as ctx:
        saved = ctx.root / "series-saved"
        shutil.rmtree(saved, ignore_errors=True)
        shutil.copytree(ctx.series, saved, symlinks=True)
        n = args.patch
        times: dict[str, list[float]] = {}
        for i in range(args.warmup + args.repeat):
            wt = ctx.root / f"wt-git-edit-{i}"
            os.sync()
            c_total, c_first, c = carry_edit(ctx, n)
            os.sync()
            g_total, g = git_edit(ctx, n, wt)
            check(ctx, n, c, g)
            shutil.rmtree(ctx.series)
            shutil.copytree(saved, ctx.series, symlinks=True)
            git(ctx, "worktree", "remove", "--force", "--force", str(wt))
            git(ctx, "update-ref", "-d", f"refs/heads/carry/{NAME}/base")
            tidy(ctx)
            counted = i >= args.warmup
            print(f"# round {i + 1}{'' if counted else ' (warm-up, not counted)'}: carry "
                  f"{c_total:.2f} s, git {g_total:.2f} s; {len(c)} commits, the same in both",
                  flush=True)
            if counted:
                for k, v in (("carry edit + amend + --continue", c_total),
                             ("  carry edit (the stop)", c_first),
                             ("git worktree add + rebase -i + amend + --continue", g_total)):
                    times.setdefault(k, []).append(v)
        shutil.rmtree(saved, ignore_errors=True)
    width = max(len(k) for k in times)
    print(f"\n{'seconds, ' + str(args.repeat) + ' rounds':<{width}}  {'min':>8} "
          f"{'median':>8} {'max':>8}")
    for k, xs in times.items():
        print(f"{k:<{width}}  {min(xs):8.3f} {statistics.median(xs):8.3f} {max(xs):8.3f}")
    med = {k: statistics.median(xs) for k, xs in times.items()}
    ratio = med["carry edit + amend + --continue"] / \
        med["git worktree add + rebase -i + amend + --continue"]
    print(f"\ncarry / git (medians)  {ratio:.2f}x")


if __name__ == "__main__":
    main()
