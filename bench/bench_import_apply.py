"""`carry import` and `carry apply` of an N-patch series, next to raw `git format-patch` and
`git am` on the same commits in the same run; plus the startup time of `carry --help`.

    python bench/bench_import_apply.py [--patches 50] [--files 2000] [--repeat 5]

The repository is made with one `git fast-import` (`bench_rebase.Stream`): --files files on
`base`, then --patches commits, each editing two files and carrying trailers like the
flagship's. carry and git run in turn (git, carry, git, carry, ...), so a drift of the
machine's speed hits both; every row is min / median / max of --repeat runs (at least 5), and
"vs git" is the ratio of the medians. The CLI rows include interpreter start-up; the in-process
rows call carry's modules directly.

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


def build(root: Path, patches: int, files: int) -> Path:
    """`base` with `files` files, `main` with `patches` commits on top, each editing two files."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    s = Stream()
    prev = s.commit("refs/heads/main", "base\n", {path_of(i): body(i, {}) for i in range(files)})
    s.parts.append(f"reset refs/tags/base\nfrom {prev}\n\n".encode())
    state: dict[int, dict[int, str]] = {}
    for n in range(patches):
        changed = {}
        for i in (n * 7 % files, (n * 13 + 1) % files):
            edits = state.setdefault(i, {})
            edits[5] = f"def f5():\n    return 5 + {n}\n\n"
            edits[19] = f"def f19():\n    return 19\n\n# patch {n}\n"
            changed[path_of(i)] = body(i, edits)
        s.commit("refs/heads/main", f"[BugFix] change {n}\n\nWhy {n}.\n\n"
                 f"Assisted-by: OpenAI Codex\nSigned-off-by: {AUTHOR}\n", changed)
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


def check_import(repo: Path, sdir: Path) -> None:
    from carry import patches as patchmod

    want = commits(repo, "base..main")
    files = sorted((sdir / "bench" / "patches").iterdir())
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


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patches", type=int, default=50)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if args.repeat < 5:
        raise SystemExit("--repeat must be at least 5 (medians of at least 5)")

    from carry import apply as applymod
    from carry import importer
    from carry import series as seriesmod
    from carry.git import Repo

    tmp = Path(tempfile.mkdtemp(prefix="carry-bench-"))
    env = {**ENV, "PATH": "/usr/bin:/bin", "HOME": str(tmp)}
    try:
        repo = build(tmp, args.patches, args.files)
        sdir = tmp / "series"
        carry = [sys.executable, "-m", "carry"]

        def run(cmd: list[str], cwd: Path = tmp) -> None:
            subprocess.run(cmd, cwd=cwd, env={**env, "PYTHONPATH": TOOLING}, check=True,
                           capture_output=True)

        def format_patch() -> None:
            out = tmp / "fp"
            shutil.rmtree(out, ignore_errors=True)
            run(["git", "format-patch", "-k", "-q", "-o", str(out), "base..main"], cwd=repo)

        def cli_import() -> None:
            shutil.rmtree(sdir, ignore_errors=True)
            run([*carry, "import", "bench", "--repo", str(repo), "--range", "base..main",
                 "--series-dir", str(sdir)])

        def lib_import() -> None:
            shutil.rmtree(sdir, ignore_errors=True)
            importer.run(sdir, "bench", str(repo), rng="base..main")

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
        git_am()
        git(wt, "update-ref", "refs/heads/am-result", "HEAD")
        cli_apply()
        check_apply(repo)

        times: dict[str, list[float]] = {}
        pairs = [("git format-patch", format_patch), ("carry import (CLI)", cli_import),
                 ("carry import (in-process)", lib_import), ("git am (worktree)", git_am),
                 ("carry apply (CLI)", cli_apply), ("carry apply (in-process)", lib_apply),
                 ("python -c pass", lambda: run([sys.executable, "-c", "pass"])),
                 ("python -c 'import carry.cli'",
                  lambda: run([sys.executable, "-c", "import carry.cli"])),
                 ("carry --help", lambda: run([*carry, "--help"]))]
        for _ in range(args.repeat):
            for name, fn in pairs:
                times.setdefault(name, []).append(timed(fn))
        check_import(repo, sdir)
        check_apply(repo)
        refs = {"carry import (CLI)": "git format-patch",
                "carry import (in-process)": "git format-patch",
                "carry apply (CLI)": "git am (worktree)",
                "carry apply (in-process)": "git am (worktree)"}

        print(f"{args.patches} patches, {args.files} files, git "
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
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
