"""`carry import` and `carry apply` of an N-patch series, next to raw `git format-patch` and
`git am` on the same commits in the same run; plus the startup time of `carry --help`.

    python bench/bench_import_apply.py [--patches 50] [--files 2000] [--repeat 5]

Every figure is the median of --repeat runs. The CLI rows include interpreter start-up; the
in-process rows call carry's modules directly, so the difference is the cost of the CLI.
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

ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "A U Thor",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "C O Mitter",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
}


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, input=input, check=True,
                          capture_output=True).stdout.decode().strip()


def build(root: Path, patches: int, files: int) -> Path:
    """A repository of `files` files, tagged `base`, with `patches` commits on top, each
    touching two files with trailers like the flagship's."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(files):
        d = repo / f"pkg{i % 40}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i}.py").write_text("".join(f"def f{j}():\n    return {j}\n\n"
                                              for j in range(20)))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    for n in range(patches):
        for i in (n * 7 % files, (n * 13 + 1) % files):
            p = repo / f"pkg{i % 40}" / f"mod{i}.py"
            p.write_text(p.read_text().replace("return 5\n", f"return 5 + {n}\n", 1)
                         + f"# patch {n}\n")
            git(repo, "add", str(p))
        git(repo, "commit", "-q", "-m", f"[BugFix] change {n}\n\nWhy {n}.\n\n"
            "Assisted-by: OpenAI Codex\nSigned-off-by: A U Thor <author@example.com>\n")
    return repo


def median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patches", type=int, default=50)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from carry import apply as applymod
    from carry import importer
    from carry import series as seriesmod
    from carry.git import Repo

    tmp = Path(tempfile.mkdtemp(prefix="carry-bench-"))
    try:
        repo = build(tmp, args.patches, args.files)
        sdir = tmp / "series"
        carry = [sys.executable, "-m", "carry"]

        def run(cmd: list[str], cwd: Path = tmp) -> None:
            subprocess.run(cmd, cwd=cwd, env=ENV, check=True, capture_output=True)

        def format_patch() -> None:
            out = tmp / "fp"
            shutil.rmtree(out, ignore_errors=True)
            run(["git", "format-patch", "-q", "-o", str(out), "base..main"], cwd=repo)

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
            run(["git", "am", "-q", *sorted(str(p) for p in (tmp / "fp").iterdir())], cwd=wt)

        def cli_apply() -> None:
            run([*carry, "apply", "bench", "--repo", str(repo), "--onto", "base", "--branch",
                 "carried", "--force", "--series-dir", str(sdir)])

        def lib_apply() -> None:
            handle = Repo.open(repo)
            applymod.run(seriesmod.find(sdir, "bench"), handle, "base", "carried", force=True)
            handle.close()

        rows: list[tuple[str, float, float | None]] = []
        t_fp = median(format_patch, args.repeat)
        rows.append(("git format-patch", t_fp, None))
        rows.append(("carry import (CLI)", median(cli_import, args.repeat), t_fp))
        rows.append(("carry import (in-process)", median(lib_import, args.repeat), t_fp))
        t_am = median(git_am, args.repeat)
        rows.append(("git am (worktree)", t_am, None))
        rows.append(("carry apply (CLI)", median(cli_apply, args.repeat), t_am))
        rows.append(("carry apply (in-process)", median(lib_apply, args.repeat), t_am))
        rows.append(("python -c pass", median(lambda: run([sys.executable, "-c", "pass"]),
                                              args.repeat), None))
        rows.append(("python -c 'import carry.cli'", median(
            lambda: run([sys.executable, "-c", "import carry.cli"]), args.repeat), None))
        rows.append(("carry --help", median(lambda: run([*carry, "--help"]), args.repeat),
                     None))

        print(f"{args.patches} patches, {args.files} files, git "
              f"{git(tmp, 'version').split()[-1]}, median of {args.repeat}")
        print(f"| {'step':<30} | {'time':>9} | {'vs git':>7} |")
        print(f"| {'-' * 30} | {'-' * 8}: | {'-' * 6}: |")
        for name, t, ref in rows:
            ratio = f"{t / ref:.2f}x" if ref else ""
            print(f"| {name:<30} | {t * 1000:>6.0f} ms | {ratio:>7} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
