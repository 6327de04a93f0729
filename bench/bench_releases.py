"""`carry releases` and `carry ci matrix` on a repository with many release tags, next to
`git ls-remote --tags` on the same repository, in one run (alternating, so load hits both).

The repository gets --tags release tags `v1.0.N` (one commit each, made with one
`git fast-import`), a `main` branch and a one-patch series whose ledger holds only the oldest
tag, so every later tag is pending: the worst case for a watcher that starts late.
`carry --version` is timed too: the cost of starting Python and carry at all. The tag names
carry lists must equal the ones `git ls-remote --tags` lists past that first tag.

Usage: python bench/bench_releases.py [--tags 500 --repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = dict(os.environ, GIT_AUTHOR_NAME="A U Thor", GIT_AUTHOR_EMAIL="author@example.com",
           GIT_COMMITTER_NAME="C O Mitter", GIT_COMMITTER_EMAIL="committer@example.com",
           GIT_CONFIG_NOSYSTEM="1")


def git(repo: Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=ENV, input=data, check=True,
                          capture_output=True).stdout.decode()


def build(root: Path, tags: int) -> tuple[Path, Path, Path]:
    repo = root / "upstream"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    stream = []
    for i in range(tags):
        body = f"release {i}\n".encode()
        msg = f"Release 1.0.{i}\n".encode()
        stream.append(b"commit refs/heads/main\n")
        stream.append(f"mark :{i + 1}\n".encode())
        stream.append(f"committer C O Mitter <c@example.com> {1_700_000_000 + i} +0000\n"
                      .encode())
        stream.append(b"data %d\n%s" % (len(msg), msg))
        stream.append(b"M 100644 inline NEWS\ndata %d\n%s\n" % (len(body), body))
        stream.append(f"reset refs/tags/v1.0.{i}\nfrom :{i + 1}\n\n".encode())
    git(repo, "fast-import", "--quiet", data=b"".join(stream))
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "FIX").write_text("fix\n")
    git(repo, "add", "FIX")
    git(repo, "commit", "-q", "-m", "Fix something")
    git(repo, "checkout", "-q", "main")
    series = root / "series"
    carry(series, "import", "bench", "--repo", str(repo), "--range", "v1.0.0..feature")
    manifest = series / "bench" / "series.toml"
    text = manifest.read_text()
    manifest.write_text(text.replace("version = ", 'target = [\n    { name = "release", '
                                     'tags = "v*" },\n    { name = "main", ref = "main" },\n]\n'
                                     "version = ", 1) if "target = [" not in text else text)
    ledger = root / "ledger.json"
    first = git(repo, "rev-parse", "v1.0.0^{commit}").strip()
    ledger.write_text(json.dumps({"schema": 1, "records": [{
        "series": "bench", "version": 1, "target": "release", "ref": "v1.0.0",
        "upstream": first, "tree": "", "plan": "", "image": "", "outcome": "passed",
        "time": "2026-12-01T00:00:00Z"}]}))
    return repo, series, ledger


def carry(series: Path, *args: str) -> str:
    env = dict(ENV, CARRY_SERIES_DIR=str(series))
    proc = subprocess.run([sys.executable, "-m", "carry", *args], env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"carry {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tags", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo, series, ledger = build(Path(tmp), args.tags)
        want = sorted(line.split("refs/tags/")[1]
                      for line in git(repo, "ls-remote", "--tags", str(repo)).splitlines())
        want.remove("v1.0.0")
        rel = json.loads(carry(series, "releases", "bench", "--repo", str(repo), "--ledger",
                               str(ledger), "--json"))["releases"]
        got = sorted(r["ref"] for r in rel if r["target"] == "release")
        assert got == want, "carry releases and git ls-remote --tags disagree"
        cells = json.loads(carry(series, "ci", "matrix", "--repo", str(repo), "--ledger",
                                 str(ledger)))["include"]
        assert sorted(c["ref"] for c in cells if c["target"] == "release") == want
        runs: dict[str, list[float]] = {"carry releases": [], "carry ci matrix": [],
                                        "carry --version": [], "git ls-remote --tags": []}
        for _ in range(args.repeat):
            runs["carry releases"].append(timed(lambda: carry(
                series, "releases", "bench", "--repo", str(repo), "--ledger", str(ledger),
                "--json")))
            runs["carry ci matrix"].append(timed(lambda: carry(
                series, "ci", "matrix", "--repo", str(repo), "--ledger", str(ledger))))
            runs["carry --version"].append(timed(lambda: carry(series, "--version")))
            runs["git ls-remote --tags"].append(timed(lambda: git(
                repo, "ls-remote", "--tags", str(repo))))
        print(f"{args.tags} tags, {len(want)} pending; median (min-max) of {args.repeat} "
              "whole-process runs; outputs checked equal")
        base = statistics.median(runs["git ls-remote --tags"])
        for name, xs in runs.items():
            med = statistics.median(xs)
            print(f"  {name:22s} {med:7.3f} s ({min(xs):.3f}-{max(xs):.3f})  {med / base:5.1f}x")


if __name__ == "__main__":
    main()
