"""Shared fixtures: real git repositories built in temporary folders, and the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

THOR = ("A U Thor", "author@example.com")
TOBY = ("Toby Mao", "toby@example.com")
LOGPROBZ = ("logprobz", "logprobz@example.com")

_CLOCK = [1_790_000_000]
UTIL = "".join(f"def h{i}():\n    return {i}\n\n" for i in range(20))


def util(**changes: int) -> str:
    """The upstream fixture's src/util.py, with `h<i>=value` edits."""
    text = UTIL
    for name, value in changes.items():
        i = name[1:]
        text = text.replace(f"def h{i}():\n    return {i}\n", f"def h{i}():\n    return {value}\n")
    return text


@pytest.fixture(autouse=True)
def _git_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Hermetic git: no user config, a fixed committer, no pager."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "C O Mitter")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
    monkeypatch.setenv("GIT_PAGER", "cat")
    monkeypatch.delenv("CARRY_SERIES_DIR", raising=False)
    monkeypatch.delenv("CARRY_REPO", raising=False)
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)


def git(cwd: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None,
        check: bool = True) -> str:
    full = dict(os.environ, **(env or {}))
    proc = subprocess.run(["git", *args], cwd=cwd, env=full, capture_output=True, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr.decode()}")
    return proc.stdout.decode("utf-8", "replace").strip()


@dataclass
class CommitBuilder:
    """A real repository that tests grow commit by commit (after rebasebot's fixture)."""

    path: Path
    clock: list[int] = field(default_factory=lambda: _CLOCK)

    @classmethod
    def init(cls, path: Path, branch: str = "main") -> CommitBuilder:
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "-q", "-b", branch)
        git(path, "config", "user.name", "C O Mitter")
        git(path, "config", "user.email", "committer@example.com")
        git(path, "config", "commit.gpgsign", "false")
        return cls(path)

    def write(self, files: dict[str, bytes | str | None]) -> None:
        for name, content in files.items():
            target = self.path / name
            if content is None:
                git(self.path, "rm", "-q", "--cached", name)
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode() if isinstance(content, str) else content)
            git(self.path, "add", name)

    def commit(
        self,
        message: str | bytes,
        files: dict[str, bytes | str | None] | None = None,
        author: tuple[str, str] = THOR,
        date: str | None = None,
        allow_empty: bool = False,
    ) -> str:
        if files:
            self.write(files)
        self.clock[0] += 3600
        msg = message.encode() if isinstance(message, str) else message
        env = {
            "GIT_AUTHOR_NAME": author[0],
            "GIT_AUTHOR_EMAIL": author[1],
            "GIT_AUTHOR_DATE": date or f"@{self.clock[0]} +0200",
            "GIT_COMMITTER_DATE": f"@{self.clock[0]} +0000",
        }
        tree = git(self.path, "write-tree")
        parent = git(self.path, "rev-parse", "-q", "--verify", "HEAD", check=False)
        args = ["commit-tree", tree] + (["-p", parent] if parent else [])
        sha = git(self.path, *args, env=env, input=msg)
        git(self.path, "update-ref", "HEAD", sha)
        return sha

    def mv(self, old: str, new: str) -> None:
        git(self.path, "mv", old, new)

    def rev(self, rev: str = "HEAD") -> str:
        return git(self.path, "rev-parse", rev)

    def tag(self, name: str, rev: str = "HEAD") -> None:
        git(self.path, "tag", name, rev)

    def branch(self, name: str, rev: str = "HEAD") -> None:
        git(self.path, "branch", "-f", name, rev)

    def checkout(self, rev: str) -> None:
        git(self.path, "checkout", "-q", rev)

    def raw(self, rev: str) -> bytes:
        return subprocess.run(["git", "cat-file", "commit", rev], cwd=self.path,
                              capture_output=True, check=True).stdout


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_carry(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Result:
    """The real console entry point in a subprocess, as a user would run it."""
    # the terminal's size is the test's to give (COLUMNS=80), never inherited from the run
    full = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    full.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "carry", *args], cwd=cwd, env=full,
                          capture_output=True, text=True)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def kill_after(args: tuple[str, ...], delay: float) -> int:
    """Start `carry ARGS`, SIGKILL it after `delay` seconds if it still runs; its exit code
    (-9 when the kill caught it mid-way)."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "carry", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ))
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    return proc.wait()


@pytest.fixture
def upstream(tmp_path: Path) -> CommitBuilder:
    """An upstream project with a little history, tagged `base`."""
    b = CommitBuilder.init(tmp_path / "upstream")
    b.commit("Initial import", {"src/core.py": "def f():\n    return 1\n",
                                "README": "upstream\n"})
    b.commit("Add helpers", {"src/util.py": UTIL})
    b.tag("base")
    return b


@pytest.fixture
def series_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "series"
    root.mkdir()
    yield root


@pytest.fixture
def make_series(series_root: Path) -> Callable[..., Any]:
    """Import BRANCH of a CommitBuilder repo as a series (rebase tests), then set manifest
    fields: `make_series(repo, "feature", targets=[...], provenance=[...])`."""

    def make(repo: CommitBuilder, branch: str, base: str = "base", name: str = "demo",
             **fields: Any) -> Any:
        from carry.intake import importer
        from carry.series import store as seriesmod

        importer.run(series_root, name,
        importer.Source(str(repo.path), branch=branch, base=base), title="Demo series")
        s = seriesmod.find(series_root, name)
        if fields:
            for key, value in fields.items():
                setattr(s.manifest, key, value)
            seriesmod.write_series(s.root, s.manifest, None)
            s = seriesmod.find(series_root, name)
        return s

    return make


# -- the GitHub double and a fork with a 3-patch series (carry pr and supersede) ----------------
FORGE_TOKEN = "ghp_test_secret_value_1234567890"
FORK = "lab/fork"


@pytest.fixture
def gh(tmp_path: Path) -> Iterator[Any]:
    """The GitHub double; it reads FORK's git data from the `fork` fixture's bare remote."""
    from tests import github_server

    server = github_server.start(FORGE_TOKEN)
    server.state.repo(FORK)
    server.state.git[FORK] = tmp_path / "origin.git"
    yield server
    server.stop()


@pytest.fixture
def fork(upstream: CommitBuilder, tmp_path: Path) -> CommitBuilder:
    """A working clone with a 3-patch series on `feature`, and a bare `origin` remote."""
    b = upstream
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(b.path, "remote", "add", "origin", str(bare))
    git(b.path, "push", "-q", "origin", "main")
    git(b.path, "fetch", "-q", "origin")
    git(b.path, "checkout", "-q", "-b", "feature")
    b.commit("core: fix f\n\nSigned-off-by: Toby Mao <toby@example.com>\n",
             {"src/core.py": "def f():\n    return 2\n"}, author=TOBY)
    b.commit("util: add h20\n\nSigned-off-by: Toby Mao <toby@example.com>\n",
             {"src/util.py": "def h20():\n    return 20\n"}, author=TOBY)
    b.commit("core: follow-up\n\nAssisted-by: OpenAI Codex\n"
             "Signed-off-by: logprobz <logprobz@example.com>\n",
             {"src/extra.py": "X = 1\n"}, author=LOGPROBZ)
    return b


def forge_env(gh: Any, root: Path) -> dict[str, str]:
    """The environment of a carry run against the GitHub-API server `gh` (a
    `github_server.RunningServer`), with series under `root`."""
    return {"GH_TOKEN": "", "GITHUB_TOKEN": FORGE_TOKEN, "GITHUB_API_URL": gh.url,
            "CARRY_SERIES_DIR": str(root)}


def import_and_apply(fork: CommitBuilder, env: dict[str, str]) -> None:
    """Series demo from main..feature of `fork`, applied onto main as carry/demo."""
    r = run_carry("import", "demo", "--repo", str(fork.path), "--range", "main..feature",
                  env=env)
    assert r.code == 0, r.err
    r = run_carry("apply", "demo", "--repo", str(fork.path), "--onto", "main", "--branch",
                  "carry/demo", env=env)
    assert r.code == 0, r.err


def conflicting_series(up: CommitBuilder, root: Path) -> tuple[str, ...]:
    """Series demo of two patches on `base`; upstream's main then changed the line patch 2
    changes, so a rebase onto main stops at 0002. Returns the `--repo`/`--series-dir` args."""
    git(up.path, "checkout", "-q", "-b", "feature", "base")
    up.commit("One: h1", {"src/util.py": util(h1=10)})
    up.commit("Two: h10", {"src/util.py": util(h1=10, h10=100)})
    up.checkout("main")
    up.commit("Upstream h10", {"src/util.py": util(h10=101)})
    args = ("--repo", str(up.path), "--series-dir", str(root))
    assert run_carry("import", "demo", "--range", "base..feature", *args).code == 0
    return args


@pytest.fixture
def loop(upstream: CommitBuilder, make_series: Callable[..., Any],
         series_root: Path) -> dict[str, Any]:
    """Seven patches onto a moved `main`: 0002 and 0005 conflict at their root (upstream
    changed the same lines), 0004 only because it changes the line 0002 introduced; the rest
    apply. A few files nobody touches show whether a stop rewrites them."""
    upstream.commit("More files", {f"docs/keep{i}.txt": f"keep {i}\n" * 50 for i in range(5)})
    git(upstream.path, "tag", "-f", "base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("P1", {"pkg/m1.py": "X = 1\n"}, author=TOBY)
    upstream.commit("P2: h1", {"src/util.py": util(h1=11)}, author=LOGPROBZ)
    upstream.commit("P3", {"pkg/m3.py": "X = 3\n"}, author=TOBY)
    upstream.commit("P4: h1 again", {"src/util.py": util(h1=12)}, author=LOGPROBZ)
    upstream.commit("P5: f", {"src/core.py": "def f():\n    return 5\n"}, author=TOBY)
    upstream.commit("P6", {"pkg/m6.py": "X = 6\n"}, author=TOBY)
    upstream.commit("P7: h15", {"src/util.py": util(h1=12, h15=150)}, author=LOGPROBZ)
    upstream.checkout("main")
    git(upstream.path, "reset", "-q", "--hard", "base")
    upstream.commit("Upstream h1", {"src/util.py": util(h1=101)})
    upstream.commit("Upstream f", {"src/core.py": "def f():\n    return 30\n"})
    upstream.commit("Upstream more", {"pkg/other.py": "Y = 1\n"})
    make_series(upstream, "feature")
    return {"up": upstream, "root": series_root,
            "args": ("rebase", "demo", "--repo", str(upstream.path), "--series-dir",
                     str(series_root)),
            "state": upstream.path / ".git" / "carry" / "rebase" / "demo" / "main.json",
            "wt": upstream.path.parent / f"{upstream.path.name}.carry" / "demo" / "main"}
