"""`carry import` and `carry apply` of an N-patch series, next to raw `git format-patch` and
`git am` on the same commits in the same run; plus the startup time of `carry --help`.

    python bench/bench_import_apply.py [--patches 50] [--files 2000] [--repeat 5] [--more 450]
                                       [--series-in-git]

The repository is made with one `git fast-import` (`bench_rebase.Stream`): --files files on
`base`, then --patches commits, each editing two files and carrying trailers like the
flagship's. carry and git run in turn (git, carry, git, carry, ...), so a drift of the
machine's speed hits both; every row is min / median / max of --repeat runs (at least 5), and
"vs git" is the ratio of the medians. The CLI rows include interpreter start-up; the in-process
rows call carry's modules directly. Removing the last run's output (format-patch's folder,
the series) happens before each timed step, not in it. With --more N the same runs also write
a series N patches longer (`long`), and the script prints what each extra patch costs git and
carry, the difference of the medians over N: start-up and fixed costs drop out. The series
folder is outside any git checkout (each version also kept as a copy under `.versions/`)
unless --series-in-git puts it in one, where a version is a tag.

Before it prints, it checks that the outputs are equal: every patch file carry import wrote
parses back to its commit (origin, author, message), and every commit carry apply made has the
tree, author and message of the commit `git am` made from format-patch's files.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rebase import ENV, TOOLING, Stream, git  # noqa: E402

AUTHOR = "A U Thor <author@example.com>"


def path_of(i: int) -> str:
    return f"pkg{i % 40}/mod{i}.py"


def body(i: int, edits: dict[int, str]) -> bytes:
    lines = [f"def f{j}():\n    return {j}\n\n" for j in range(20)]
    for n, text in edits.items():
        lines[n] = text
    return "".join(lines).encode()


def build(root: Path, patches: int, files: int, more: int = 0) -> Path:
    """`base` with `files` files, `main` with `patches` commits on top, each editing two files;
    `long` has `more` commits more of the same kind on top of `main`."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    s = Stream()
    prev = s.commit("refs/heads/main", "base\n", {path_of(i): body(i, {}) for i in range(files)})
    s.parts.append(f"reset refs/tags/base\nfrom {prev}\n\n".encode())
    state: dict[int, dict[int, str]] = {}
    for n in range(patches + more):
        changed = {}
        for i in (n * 7 % files, (n * 13 + 1) % files):
            edits = state.setdefault(i, {})
            edits[5] = f"def f5():\n    return 5 + {n}\n\n"
            edits[19] = f"def f19():\n    return 19\n\n# patch {n}\n"
            changed[path_of(i)] = body(i, edits)
        ref = "refs/heads/main" if n < patches else "refs/heads/long"
        prev = s.commit(ref, f"[BugFix] change {n}\n\nWhy {n}.\n\n"
                        f"Assisted-by: OpenAI Codex\nSigned-off-by: {AUTHOR}\n", changed,
                        parent=prev if n == patches else None)
    git(repo, "fast-import", "--quiet", input=s.bytes())
    git(repo, "reset", "-q", "--hard", "main")
    return repo


def commits(repo: Path, rng: str) -> list[tuple[str, str, bytes, str]]:
    """(tree, author line, exact message, sha) of each commit of `rng`, oldest first."""
    from carry.git import Repo

    handle = Repo.open(repo)
    try:
        out = []
        for sha in git(repo, "rev-list", "--reverse", rng).split():
            c = handle.read_commit(sha)
            out.append((c.tree, c.author.line(), c.message, sha))
        return out
    finally:
        handle.close()


def check_import(repo: Path, sdir: Path, name: str = "bench", rng: str = "base..main") -> None:
    from carry.series import patches as patchmod

    want = commits(repo, rng)
    files = sorted((sdir / name / "patches").iterdir())
    assert len(files) == len(want), (len(files), len(want))
    for f, (_, author, message, sha) in zip(files, want, strict=True):
        p = patchmod.parse(int(f.name[:4]), f.name, f.read_bytes())
        assert (p.origin, p.author.line(), p.message) == (sha, author, message), f.name


def check_apply(repo: Path) -> None:
    am = commits(repo, "base..am-result")
    ours = commits(repo, "base..carried")
    orig = commits(repo, "base..main")
    assert len(am) == len(ours) == len(orig), (len(am), len(ours), len(orig))
    for a, c, o in zip(am, ours, orig, strict=True):
        assert a[:3] == c[:3] == o[:3], (a, c, o)


def timed(fn: Callable[[], object], setup: Callable[[], object] | None = None) -> float:
    if setup is not None:
        setup()  # removing the last run's output is not part of the step
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patches", type=int, default=50)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--more", type=int, default=0, metavar="N",
                    help="also import a series N patches longer, for the cost per extra patch")
    ap.add_argument("--series-in-git", action="store_true",
                    help="keep the series in a git checkout (versions tagged, not copied)")
    args = ap.parse_args()
    if args.repeat < 5:
        raise SystemExit("--repeat must be at least 5 (medians of at least 5)")

    from carry.git import Repo
    from carry.intake import apply as applymod
    from carry.intake import importer
    from carry.series import store as seriesmod

    tmp = Path(tempfile.mkdtemp(prefix="carry-bench-"))
    env = {**ENV, "PATH": "/usr/bin:/bin", "HOME": str(tmp)}
    try:
        repo = build(tmp, args.patches, args.files, args.more)
        sdir = tmp / "series"
        if args.series_in_git:  # as in carry's own checkout: versions are tags, not copies
            git(tmp, "init", "-q")
        carry = [sys.executable, "-m", "carry"]

        def run(cmd: list[str], cwd: Path = tmp) -> None:
            subprocess.run(cmd, cwd=cwd, env={**env, "PYTHONPATH": TOOLING}, check=True,
                           capture_output=True)

        def clean(path: Path) -> Callable[[], None]:
            def go() -> None:
                shutil.rmtree(path, ignore_errors=True)
                if args.series_in_git and path.parent == sdir:
                    tags = git(tmp, "tag", "--list", f"series/{path.name}/*").split()
                    if tags:
                        git(tmp, "tag", "-d", *tags)
            return go

        def format_patch(rng: str = "base..main", out: Path = tmp / "fp") -> None:
            run(["git", "format-patch", "-k", "-q", "-o", str(out), rng], cwd=repo)

        def cli_import(name: str = "bench", rng: str = "base..main") -> None:
            run([*carry, "import", name, "--repo", str(repo), "--range", rng,
                 "--series-dir", str(sdir)])

        def lib_import(name: str = "bench", rng: str = "base..main") -> None:
            importer.run(sdir, name, importer.Source(str(repo), range=rng))

        wt = tmp / "wt"
        git(repo, "worktree", "add", "-q", "--detach", str(wt), "base")

        def git_am() -> None:
            git(wt, "checkout", "-q", "--detach", "base")
            run(["git", "am", "-k", "-q", *sorted(str(p) for p in (tmp / "fp").iterdir())], cwd=wt)

        def cli_apply() -> None:
            run([*carry, "apply", "bench", "--repo", str(repo), "--onto", "base", "--branch",
                 "carried", "--force", "--series-dir", str(sdir)])

        def lib_apply() -> None:
            handle = Repo.open(repo)
            applymod.run(seriesmod.find(sdir, "bench"), handle, "base", "carried", force=True)
            handle.close()

        # Warm-up, and the outputs to check.
        format_patch()
        cli_import()
        check_import(repo, sdir)
        if args.more:
            cli_import("long", "base..long")
            check_import(repo, sdir, "long", "base..long")
        git_am()
        git(wt, "update-ref", "refs/heads/am-result", "HEAD")
        cli_apply()
        check_apply(repo)

        times: dict[str, list[float]] = {}
        fp, bench, long = clean(tmp / "fp"), clean(sdir / "bench"), clean(sdir / "long")
        pairs: list[tuple[str, Callable[[], object], Callable[[], object] | None]] = [
            ("git format-patch", format_patch, fp), ("carry import (CLI)", cli_import, bench),
            ("carry import (in-process)", lib_import, bench),
            ("git am (worktree)", git_am, None),
            ("carry apply (CLI)", cli_apply, None), ("carry apply (in-process)", lib_apply, None),
            ("python -c pass", lambda: run([sys.executable, "-c", "pass"]), None),
            ("python -c 'import typer'", lambda: run([sys.executable, "-c", "import typer"]),
             None),
            ("python -c 'import carry.cli.app'",
             lambda: run([sys.executable, "-c", "import carry.cli.app"]), None),
            ("carry --help", lambda: run([*carry, "--help"]), None)]
        n = args.patches + args.more
        if args.more:
            pairs += [(f"git format-patch ({n})", lambda: format_patch("base..long"), fp),
                      (f"carry import (CLI, {n})", lambda: cli_import("long", "base..long"), long),
                      (f"carry import (in-process, {n})",
                       lambda: lib_import("long", "base..long"), long)]
        for _ in range(args.repeat):
            for name, fn, setup in pairs:
                times.setdefault(name, []).append(timed(fn, setup))
        check_import(repo, sdir)
        if args.more:
            check_import(repo, sdir, "long", "base..long")
        check_apply(repo)
        refs = {"carry import (CLI)": "git format-patch",
                "carry import (in-process)": "git format-patch",
                "carry apply (CLI)": "git am (worktree)",
                "carry apply (in-process)": "git am (worktree)",
                f"carry import (CLI, {n})": f"git format-patch ({n})",
                f"carry import (in-process, {n})": f"git format-patch ({n})"}

        print(f"{args.patches} patches, {args.files} files, series "
              f"{'in a git checkout' if args.series_in_git else 'outside git'}, git "
              f"{git(tmp, 'version').split()[-1]}, min / median / max of {args.repeat}, "
              "outputs checked equal")
        print(f"| {'step':<30} | {'min':>9} | {'median':>9} | {'max':>9} | {'vs git':>7} |")
        print(f"| {'-' * 30} | {'-' * 8}: | {'-' * 8}: | {'-' * 8}: | {'-' * 6}: |")
        for name, ts in times.items():
            med = statistics.median(ts)
            ref = refs.get(name)
            ratio = f"{med / statistics.median(times[ref]):.2f}x" if ref else ""
            print(f"| {name:<30} | {min(ts) * 1000:>6.0f} ms | {med * 1000:>6.0f} ms | "
                  f"{max(ts) * 1000:>6.0f} ms | {ratio:>7} |")
        if args.more:
            print(f"\nEach patch past {args.patches} (difference of the medians / {args.more}):")
            for short, longer in [("git format-patch", f"git format-patch ({n})"),
                                  ("carry import (CLI)", f"carry import (CLI, {n})"),
                                  ("carry import (in-process)", f"carry import (in-process, {n})")]:
                per = (statistics.median(times[longer]) - statistics.median(times[short]))
                print(f"  {short:<26} {per / args.more * 1000:.3f} ms per patch")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
