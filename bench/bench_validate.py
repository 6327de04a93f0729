"""Validate the synthetic upstream cold and cached, through the CLI as a user runs it.

Builds the project the validate tests use (three pytest suites, `repo: local` pre-commit hooks,
one at the manual stage, a two-patch fork series; tests/validate/synthetic.py), then times

- cold: `carry validate ... --no-cache` (replay, worktree, pytest, the hooks, diff check);
- cached: the same command without --no-cache, answered from the results cache;

with `--engine local`, and with `--engine podman` when CARRY_TEST_IMAGE names an image
(ci/container/build-test-image.sh prints one) and podman works. One warm-up run first, so
pre-commit's own environment cache is warm and "cold" means carry's cache only.

--pad N puts N more files into the onto commit (a release `v2pad` on top of v2), to show
what the repository's size costs: a cold run replays and checks out all of them, a cached
run is found before any replay and should not move.

Usage: python bench/bench_validate.py [--repeat 5] [--engine local --engine podman] [--json]
       python bench/bench_validate.py --engine local --pad 100000 --repeat 3
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

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests"), str(HERE.parent / "tests" / "validate")]
ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMITTER_NAME": "Bench",
       "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_PAGER": "cat"}


def carry(*args: str) -> tuple[int, float]:
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "carry", *args], capture_output=True,
                          text=True)
    seconds = time.perf_counter() - began
    if proc.returncode != 0:
        raise SystemExit(f"carry {' '.join(args)} exited {proc.returncode}:\n"
                         f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.returncode, seconds


def podman_image() -> str | None:
    ref = os.environ.get("CARRY_TEST_IMAGE", "")
    if not ref or shutil.which("podman") is None:
        return None
    conf = HERE.parent / "ci" / "container" / "containers.conf"
    os.environ.setdefault("CONTAINERS_CONF", str(conf))
    ok = subprocess.run(["podman", "image", "inspect", ref], capture_output=True).returncode
    return ref if ok == 0 else None


def pad(repo: Path, files: int) -> str:
    """Tag `v2pad`: v2 plus `files` small files, written by one `git fast-import`."""
    parts = [b"commit refs/tags/v2pad\ncommitter Bench <bench@example.com> 1700000000 +0000\n"
             b"data 4\npad\nfrom refs/tags/v2\n"]
    for i in range(files):
        body = b"pad %d\n" % i
        parts.append(b"M 100644 inline pad/d%04d/f%03d.txt\ndata %d\n%s\n"
                     % (i // 100, i % 100, len(body), body))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(parts) + b"\n",
                   check=True)
    return "v2pad"


def bench(engine: str, root: Path, repeat: int, files: int = 0) -> dict[str, object]:
    import synthetic

    up = synthetic.upstream_project(root / f"calc-{engine}")
    series = root / f"series-{engine}"
    image = podman_image() if engine == "podman" else ""
    if engine == "podman" and not image:
        return {"engine": engine, "skipped": "no CARRY_TEST_IMAGE or podman cannot see it"}
    python = "/opt/venv/bin/python" if engine == "podman" else sys.executable
    synthetic.import_series(series, up.path, "fix", "fix", python, image=image or "",
                            requirements=[synthetic.WHEEL] if engine == "podman" else [])
    onto = pad(up.path, files) if files else "v2"
    cmd = ("validate", "fix", "--repo", str(up.path), "--onto", onto, "--engine", engine,
           "--series-dir", str(series))
    carry(*cmd, "--no-cache")  # warm-up: pre-commit's environment cache, page cache
    cold = [carry(*cmd, "--no-cache")[1] for _ in range(repeat)]
    cached = [carry(*cmd)[1] for _ in range(max(repeat, 5))]
    return {"engine": engine, "image": image or None, "repeat": repeat,
            "cold_median_s": round(statistics.median(cold), 3),
            "cold_min_s": round(min(cold), 3),
            "cached_median_s": round(statistics.median(cached), 3),
            "cached_min_s": round(min(cached), 3),
            "command": "carry " + " ".join(cmd)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--engine", action="append", choices=["local", "podman"])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--pad", type=int, default=0, help="files added to the onto commit")
    args = ap.parse_args()
    engines = args.engine or ["local", "podman"]
    os.environ.update(ENV)
    with tempfile.TemporaryDirectory(prefix="carry-bench-validate-") as tmp:
        os.environ["HOME"] = str(Path(tmp) / "home")  # a private pre-commit cache
        Path(os.environ["HOME"]).mkdir()
        rows = [bench(e, Path(tmp), args.repeat, args.pad) for e in engines]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"# carry validate, synthetic upstream (3 suites, 10 tests, 3 hooks) + {args.pad} "
          "files, "
          f"{os.cpu_count()} CPUs; medians of {args.repeat} cold runs and "
          f"{max(args.repeat, 5)} cached runs")
    print(f"{'engine':8} {'cold (--no-cache)':>18} {'cached':>10}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['engine']:8} skipped: {r['skipped']}")
            continue
        print(f"{r['engine']:8} {r['cold_median_s']:>17.2f}s {r['cached_median_s']:>9.3f}s "
              f"(cached min {r['cached_min_s']:.3f}s)")


if __name__ == "__main__":
    main()
