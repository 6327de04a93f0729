"""The conflict loop on a repository that looks like vLLM: carry against git, in one run.

`conflicts_repo.py` builds (once per parameter set, cached) about 5,000 Python-like files of
5-50 KB in ~300 directories, a base history, an upstream moved by 200 commits over several
hundred files, and a 50-patch series by two authors whose replay conflicts at 20 patches:
3 ROOT conflicts (upstream changed the very lines) and 17 DEPENDENT ones (they change lines an
earlier conflicting patch introduced), plus 2 patches upstream took as they are. The series is
imported with `carry init` and `carry import`; its target `upstream-main` is the moved upstream.

Each round times, in turn (so a busy moment on a shared machine falls on all of them), with
`sync` before each so no one pays for another's dirty pages:

- carry's whole loop: `carry rebase bench --target upstream-main`, which stops at the first
  conflict, then `carry rebase --skip` until it is done, as a maintainer types them (the first
  call is also shown alone: it is what a CI job needs to know what conflicts);
- `carry rebase --dry-run --json`: every would-conflict, without stopping;
- git's whole loop: `git worktree add` and `git cherry-pick base..series` in it, with
  `git cherry-pick --skip` at each stop (a conflict, or a pick upstream already has);
- `carry --version`: the interpreter and CLI start, the floor of every carry call.

carry runs only through its CLI (`python -m carry`, this checkout's `tooling/`). Every round
checks that both loops give each patch the same outcome (applied, conflict-skipped, dropped),
that every applied patch has the same tree in carry's branch and in git's worktree, that the
outcomes are the ones the generator designed, and that carry's dry run foresaw every conflict
and drop; any difference stops the bench. One warm-up round (--warmup) is not counted.

Usage: python bench/bench_conflicts.py [--repeat 5] [--files 5000 --patches 50 ...]
Quick: python bench/bench_conflicts.py --small        (3 rounds, under a minute)
Where a --skip goes: python bench/bench_conflicts.py --small --repeat 1 --profile-skip
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import conflicts_repo as gen  # noqa: E402

TOOLING = str(Path(__file__).resolve().parents[1] / "tooling")
NAME, TARGET = "bench", "upstream-main"
SERIES_REF = "refs/remotes/fork/dev/bench"
SMALL = gen.Params(files=400, dirs=30, history=40, upstream=40, patches=16, roots=2,
                   dependents=4, drops=1)


@dataclass
class Ctx:
    root: Path  # the cache entry: repo/, design.json, series/, home/
    design: dict[str, Any]
    env: dict[str, str]
    subject: dict[str, str] = field(default_factory=dict)  # series commit -> subject
    rounds: int = 0

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    @property
    def series(self) -> Path:
        return self.root / "series"


def hermetic_env(home: Path) -> dict[str, str]:
    """No user or system git config, no GIT_* locating variable, this checkout's carry."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "CARRY_")) and k != "PYTHONPATH"}
    env.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "PYTHONPATH": TOOLING,
                "GIT_COMMITTER_NAME": "C O Mitter", "GIT_COMMITTER_EMAIL": "committer@example.com",
                "GIT_PAGER": "cat"})
    return env


def git(ctx: Ctx, *args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd or ctx.repo, capture_output=True, env=ctx.env)
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args[:3])} failed: {proc.stderr.decode()[:500]}")
    return proc.stdout.decode()


def carry(ctx: Ctx, *args: str, ok: tuple[int, ...] = (0,)) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "carry", *args], capture_output=True,
                          env=ctx.env, cwd=ctx.root, text=True)
    if proc.returncode not in ok:
        raise SystemExit(f"carry {' '.join(args[:2])} exited {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip()[:800]}")
    return proc.returncode, proc.stdout


def rebase_args(ctx: Ctx, *extra: str) -> list[str]:
    return ["rebase", NAME, "--repo", str(ctx.repo), "--series-dir", str(ctx.series), *extra]


# -- setup -----------------------------------------------------------------------------------------


@contextlib.contextmanager
def prepared(params: gen.Params, cache: Path) -> Iterator[Ctx]:
    """The cached repository (built on first use), a fresh series imported into it through
    the CLI, and nothing left from an earlier run; one run at a time per cache entry."""
    t0 = time.perf_counter()
    root, built = gen.ensure(params, cache)
    took = time.perf_counter() - t0
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        (root / "home").mkdir(exist_ok=True)
        ctx = Ctx(root, json.loads((root / "design.json").read_text()),
                  hermetic_env(root / "home"))
        tidy(ctx)
        shutil.rmtree(ctx.series, ignore_errors=True)
        carry(ctx, "init", NAME, "--upstream", "vllm-project/vllm", "--fork", "lab/vllm",
              "--repo", str(ctx.repo), "--dev-branch", "dev/bench", "--base", "base",
              "--series-dir", str(ctx.series))
        carry(ctx, "import", NAME, "--repo", str(ctx.repo), "--range",
              f"base..{SERIES_REF}", "--series-dir", str(ctx.series))
        for line in git(ctx, "log", "--format=%H %s", f"base..{SERIES_REF}").splitlines():
            sha, subject = line.split(" ", 1)
            ctx.subject[sha] = subject
        print(f"# repo {root} ({f'built in {took:.1f} s' if built else 'cached'})")
        try:
            yield ctx
        finally:
            tidy(ctx)


def tidy(ctx: Ctx) -> None:
    """What a round (or a killed run) leaves: a stopped carry rebase, the bench's branches,
    git's worktrees."""
    if ctx.series.exists():
        carry(ctx, *rebase_args(ctx, "--abort"), ok=(0, 1, 2))
    for ref in git(ctx, "for-each-ref", "--format=%(refname)", "refs/heads/bench/").split():
        git(ctx, "update-ref", "-d", ref)
    for wt in ctx.root.glob("wt-git-*"):
        git(ctx, "worktree", "remove", "--force", "--force", str(wt))
        shutil.rmtree(wt, ignore_errors=True)
    git(ctx, "worktree", "prune")


# -- the loops -------------------------------------------------------------------------------------


@dataclass
class Loop:
    total: float = 0.0
    first: float = 0.0
    resumes: list[float] = field(default_factory=list)
    outcome: dict[str, str] = field(default_factory=dict)  # subject -> applied|conflict|dropped
    trees: list[tuple[str, str]] = field(default_factory=list)  # (subject, tree) of each commit


def forecast_of(doc: Any) -> dict[str, str]:
    """What a dry run foresees: every patch that conflicts now or would once the ones before
    it are skipped, and every drop."""
    rows = doc if isinstance(doc, list) else doc.get("results", [doc])
    kinds = {"conflict": "conflict", "would-conflict": "conflict", "dropped": "dropped"}
    return {p["subject"]: kinds[p["status"]] for p in rows[0]["patches"] if p["status"] in kinds}


def stopped_at(ctx: Ctx, said: str) -> str:
    """The subject of the patch the stopped rebase waits on, from `carry status --json`
    (`said`: what the call that exited 1 printed, shown if nothing is stopped)."""
    _, text = carry(ctx, "status", NAME, "--repo", str(ctx.repo), "--series-dir",
                    str(ctx.series), "--json")
    (series,) = json.loads(text)["series"]
    if len(series["stopped"]) != 1:
        raise SystemExit(f"carry rebase exited 1 with {len(series['stopped'])} rebases "
                         f"stopped: {said.strip()[:800]}")
    stop = series["stopped"][0]
    number = int(Path(stop["patch"]).name.split("-", 1)[0])
    return str(ctx.design["patches"][number - 1]["subject"])


def carry_loop(ctx: Ctx, branch: str) -> Loop:
    """`carry rebase` until its first stop, then `carry rebase --skip` until done, as a
    maintainer who leaves out every conflict types them (no --json). The time is that of the
    calls: between them, untimed, `carry status --json` names the patch it stopped at."""
    out = Loop()
    t0 = time.perf_counter()
    code, said = carry(ctx, *rebase_args(ctx, "--target", TARGET, "--branch", branch),
                       ok=(0, 1))
    out.first = time.perf_counter() - t0
    while code == 1:
        out.outcome[stopped_at(ctx, said)] = "conflict"
        if len(out.resumes) > len(ctx.subject):
            raise SystemExit("carry rebase --skip did not finish after one call per patch")
        t1 = time.perf_counter()
        code, said = carry(ctx, *rebase_args(ctx, "--skip"), ok=(0, 1))
        out.resumes.append(time.perf_counter() - t1)
    out.total = out.first + sum(out.resumes)
    if len(out.outcome) != len(out.resumes):
        raise SystemExit(f"carry stopped {len(out.resumes)} times at "
                         f"{len(out.outcome)} different patches")
    out.trees = log_trees(ctx, branch)
    for subject, _ in out.trees:
        if subject in out.outcome:
            raise SystemExit(f"carry applied {subject!r}, which it stopped at and was told to "
                             "skip")
        out.outcome[subject] = "applied"
    for subject in ctx.subject.values():
        out.outcome.setdefault(subject, "dropped")
    return out


def git_loop(ctx: Ctx, wt: Path) -> Loop:
    """One worktree, `git cherry-pick` of the series, `--skip` at every stop (a conflict, or a
    pick that upstream already made: git stops as it would come out empty)."""
    out = Loop()
    t0 = time.perf_counter()
    out.first, stops = cherry_pick_loop(ctx, wt, "refs/remotes/upstream/main", len(ctx.subject))
    out.total = time.perf_counter() - t0
    out.trees = log_trees(ctx, "HEAD", wt)
    out.outcome = {subject: "applied" for subject, _ in out.trees}
    out.outcome.update({ctx.subject[sha]: kind for sha, kind in stops})
    return out


def cherry_pick_loop(ctx: Ctx, wt: Path, onto: str, patches: int
                     ) -> tuple[float, list[tuple[str, str]]]:
    """git's own loop, as a maintainer runs it: a worktree at `onto`, `git cherry-pick` of the
    series, `--skip` at every stop. Returns the time of the `worktree add` and each stop's
    commit with why it stopped ("conflict", or "dropped": the pick would come out empty)."""
    stops: list[tuple[str, str]] = []
    t0 = time.perf_counter()
    git(ctx, "worktree", "add", "-q", "--detach", str(wt), onto)
    added = time.perf_counter() - t0
    gitdir = Path((wt / ".git").read_text().split(": ", 1)[1].strip())
    args = ["cherry-pick", f"base..{SERIES_REF}"]
    while True:
        proc = subprocess.run(["git", *args], cwd=wt, capture_output=True, env=ctx.env)
        if proc.returncode == 0:
            return added, stops
        said = proc.stderr.decode() + proc.stdout.decode()
        head = gitdir / "CHERRY_PICK_HEAD"
        if not head.exists() or len(stops) > patches:
            raise SystemExit(f"git {args[0]} failed: {said[:500]}")
        kind = "conflict" if "could not apply" in said else \
            "dropped" if "is now empty" in said else ""
        if not kind:
            raise SystemExit(f"git {args[0]} stopped for an unknown reason: {said[:500]}")
        stops.append((head.read_text().strip(), kind))
        args = ["cherry-pick", "--skip"]


def log_trees(ctx: Ctx, head: str, cwd: Path | None = None) -> list[tuple[str, str]]:
    lines = git(ctx, "log", "--reverse", "--format=%T %s", f"refs/remotes/upstream/main..{head}",
                cwd=cwd).splitlines()
    return [(line.split(" ", 1)[1], line.split(" ", 1)[0]) for line in lines]


def check(ctx: Ctx, c: Loop, g: Loop, dry: dict[str, str]) -> None:
    """Both loops agree patch by patch and tree by tree, and with the design; carry's dry run
    foresaw every conflict and drop. Stops the bench otherwise."""
    want = {p["subject"]: {"root": "conflict", "dependent": "conflict", "drop": "dropped"}
            .get(p["kind"], "applied") for p in ctx.design["patches"]}

    def differ(a: dict[str, str], b: dict[str, str]) -> str:
        keys = sorted(set(a) | set(b), key=lambda s: [*a, *b].index(s))
        return "; ".join(f"{k!r}: {a.get(k, '-')} vs {b.get(k, '-')}"
                         for k in keys if a.get(k) != b.get(k))[:1500]

    if c.outcome != g.outcome:
        raise SystemExit("carry's and git's per-patch outcomes differ: "
                         + differ(c.outcome, g.outcome))
    if c.trees != g.trees:
        bad = next(i for i, (x, y) in enumerate(zip(c.trees + [("", "")], g.trees + [("", "")],
                                                        strict=False)) if x != y)
        raise SystemExit(f"carry's and git's trees differ from applied commit {bad + 1}: "
                         f"{c.trees[bad:bad + 1]} vs {g.trees[bad:bad + 1]}")
    if g.outcome != want:
        raise SystemExit(f"the loops' outcomes differ from the generator's design: "
                         f"{differ(g.outcome, want)}")
    stops = {k: v for k, v in want.items() if v != "applied"}
    if dry != stops:
        raise SystemExit(f"carry's dry run did not foresee the conflicts and drops: "
                         f"{differ(dry, stops)}")


# -- the rounds ------------------------------------------------------------------------------------


def one_round(ctx: Ctx, times: dict[str, list[float]], counted: bool) -> None:
    ctx.rounds += 1
    branch, wt = f"bench/carry-{ctx.rounds}", ctx.root / f"wt-git-{ctx.rounds}"
    os.sync()
    c = carry_loop(ctx, branch)
    os.sync()
    g = git_loop(ctx, wt)
    os.sync()
    t0 = time.perf_counter()
    _, text = carry(ctx, *rebase_args(ctx, "--target", TARGET, "--dry-run", "--json"), ok=(1,))
    dry_t = time.perf_counter() - t0
    t0 = time.perf_counter()
    carry(ctx, "--version")
    version_t = time.perf_counter() - t0
    check(ctx, c, g, forecast_of(json.loads(text)))
    tidy(ctx)
    if counted:
        for k, v in (("carry whole loop", c.total), ("  first call (stops)", c.first),
                     ("  each --skip (median)", statistics.median(c.resumes)),
                     ("carry rebase --dry-run --json", dry_t),
                     ("git whole loop", g.total), ("  git worktree add", g.first),
                     ("carry --version", version_t)):
            times.setdefault(k, []).append(v)
    summary = Counter(c.outcome.values())
    print(f"# round {ctx.rounds}{'' if counted else ' (warm-up, not counted)'}: carry "
          f"{c.total:.2f} s in {1 + len(c.resumes)} calls, git {g.total:.2f} s; "
          f"{summary['applied']} applied, {summary['conflict']} conflicts skipped, "
          f"{summary['dropped']} dropped, same in both, trees equal", flush=True)


def describe(ctx: Ctx) -> None:
    d, p = ctx.design, ctx.design["params"]
    kinds = Counter(x["kind"] for x in d["patches"])
    size = int(git(ctx, "ls-tree", "-r", "-l", d["target"]).count("\n"))
    moved = git(ctx, "diff", "--shortstat", d["base"], d["target"]).strip()
    print(f"# {size} files in the target ({p['files']} generated, {p['dirs']} dirs), base "
          f"history {p['history']} commits, upstream moved by {p['upstream']}: {moved}")
    print(f"# series: {len(d['patches'])} patches ({kinds['root']} root + {kinds['dependent']} "
          f"dependent conflicts, {kinds['drop']} taken upstream, "
          f"{sum(1 for x in d['patches'] if x['fixup'])} fixup!); git "
          f"{git(ctx, 'version').split()[-1]}, {os.cpu_count()} cores")
    for x in d["patches"]:
        if x["kind"] == "root":
            print(f"#   root {x['number']:04d}: upstream {x['upstream'][:12]} changed its lines")
    print("#   dependents (patch: the conflicting patch it builds on): " + ", ".join(
        f"{x['number']:04d}:{x['builds_on']:04d}" for x in d["patches"]
        if x["kind"] == "dependent"))


def report(times: dict[str, list[float]], repeat: int) -> None:
    width = max(len(k) for k in times)
    print(f"\n{'seconds, ' + str(repeat) + ' rounds':<{width}}  {'min':>8} {'median':>8} "
          f"{'max':>8}")
    for k, xs in times.items():
        print(f"{k:<{width}}  {min(xs):8.3f} {statistics.median(xs):8.3f} {max(xs):8.3f}")
    med = {k: statistics.median(xs) for k, xs in times.items()}
    git_t = med["git whole loop"]
    print(f"\nwhole loop / git's whole loop      {med['carry whole loop'] / git_t:6.2f}x  "
          "(goal: at most 1.0x)")
    print(f"first call / git's whole loop      {med['  first call (stops)'] / git_t:6.2f}x  "
          "(goal: at most 0.5x)")
    dry = med["carry rebase --dry-run --json"]
    print(f"dry run / git's whole loop         {dry / git_t:6.2f}x")


def profile_skip(ctx: Ctx, out: Path) -> None:
    """One `--skip` (the first) under cProfile, and every git process it ran (trace2): where
    the time of a resume goes."""
    carry(ctx, *rebase_args(ctx, "--target", TARGET, "--branch", "bench/profile"), ok=(1,))
    trace, prof = out / "trace2.json", out / "skip.prof"
    env = {**ctx.env, "GIT_TRACE2_EVENT": str(trace)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "carry",
                    *rebase_args(ctx, "--skip")], env=env, cwd=ctx.root, capture_output=True,
                   check=False)
    wall = time.perf_counter() - t0
    tidy(ctx)
    print(f"\n## one --skip under cProfile: {wall:.2f} s wall (profiled)")
    names: dict[str, str] = {}
    secs: dict[str, float] = {}
    for line in trace.read_text().splitlines():
        ev = json.loads(line)
        sid = ev.get("sid", "")
        if "/" in sid:  # a child that git started itself: counted in its parent
            continue
        if ev.get("event") == "start" and any(a.startswith("--batch") for a in ev["argv"]):
            names[sid] = "cat-file --batch (open for the whole call)"
        elif ev.get("event") == "cmd_name":
            names.setdefault(sid, ev["name"])
        elif ev.get("event") == "exit":
            secs[sid] = float(ev["t_abs"])
    by: dict[str, list[float]] = {}
    for sid, t in secs.items():
        by.setdefault(names.get(sid, "?"), []).append(t)
    print(f"git processes it ran: {sum(len(x) for x in by.values())}, "
          f"{sum(sum(x) for x in by.values()):.2f} s in all: " + ", ".join(
              f"{cmd} x{len(xs)} {sum(xs):.2f} s" for cmd, xs in
              sorted(by.items(), key=lambda kv: -sum(kv[1]))))
    stats = pstats.Stats(str(prof))
    stats.sort_stats("cumulative").print_stats(r"carry/(?!cli)", 25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    d = gen.Params()
    for k in ("files", "dirs", "history", "upstream", "patches", "roots", "dependents", "drops",
              "seed"):
        ap.add_argument(f"--{k}", type=int, default=None,
                        help=f"default {getattr(d, k)} ({getattr(SMALL, k)} with --small)")
    ap.add_argument("--small", action="store_true", help="a preset that runs in under a minute")
    ap.add_argument("--repeat", type=int, default=None,
                    help="counted rounds after one warm-up; default 5 (3 with --small); 0: "
                    "none, e.g. with --profile-skip")
    ap.add_argument("--warmup", type=int, default=1, help="rounds run first, not counted")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "carry-bench",
                    help="where generated repositories are kept, one folder per parameter set")
    ap.add_argument("--profile-skip", action="store_true",
                    help="after the rounds, profile one --skip (cProfile and git's trace2)")
    args = ap.parse_args()
    if args.repeat is None:
        args.repeat = 3 if args.small else 5
    preset = SMALL if args.small else d
    params = gen.Params(**{k: getattr(args, k) if getattr(args, k) is not None
                           else getattr(preset, k) for k in gen.Params.__dataclass_fields__})
    with prepared(params, args.cache) as ctx:
        describe(ctx)
        times: dict[str, list[float]] = {}
        for i in range(args.warmup + args.repeat if args.repeat else 0):
            one_round(ctx, times, counted=i >= args.warmup)
        if times:
            report(times, args.repeat)
        if args.profile_skip:
            with tempfile.TemporaryDirectory(prefix="carry-skip-") as tmp:
                profile_skip(ctx, Path(tmp))


if __name__ == "__main__":
    main()
