"""The round-trip oracle shared by the example and property tests: import a range, apply it
onto the same base, and compare every commit with its original byte for byte."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from carry.git import Repo
from carry.intake import apply as applymod
from carry.intake import importer
from carry.series import store as seriesmod
from tests.conftest import git


@dataclass(frozen=True)
class Raw:
    """A commit as git stores it, split into the parts the round trip must keep."""

    tree: bytes
    author: bytes
    committer: bytes
    extra: tuple[bytes, ...]
    message: bytes


def raw_commit(repo: Path, rev: str) -> Raw:
    body = subprocess.run(["git", "cat-file", "commit", rev], cwd=repo, capture_output=True,
                          check=True).stdout
    head, _, message = body.partition(b"\n\n")
    fields: dict[bytes, bytes] = {}
    extra = []
    for line in head.split(b"\n"):
        key, _, value = line.partition(b" ")
        if key in (b"tree", b"author", b"committer"):
            fields[key] = value
        elif key != b"parent":
            extra.append(line)
    return Raw(fields[b"tree"], fields[b"author"], fields[b"committer"], tuple(extra), message)


def commits(repo: Path, rng: str) -> list[str]:
    out = subprocess.run(["git", "rev-list", "--reverse", rng], cwd=repo, capture_output=True,
                         check=True, text=True).stdout
    return out.split()


def roundtrip(repo: Path, base: str, series_root: Path, name: str = "rt",
              branch: str = "carried") -> list[tuple[Raw, Raw]]:
    """Import base..HEAD, apply it onto base as `branch` in a repository that has base's
    history and none of the commits the patches came from (as on a machine with upstream
    only: carry cannot take their trees, it must apply every patch); return (original,
    applied) pairs."""
    importer.run(series_root, name,
        importer.Source(str(repo), range=f"{base}..HEAD"), today="2026-12-03")
    series = seriesmod.find(series_root, name)
    sha = git(repo, "rev-parse", "--verify", f"{base}^{{commit}}")
    other = repo.with_name(repo.name + "-upstream-only")
    git(repo.parent, "init", "-q", str(other))
    git(other, "fetch", "-q", str(repo), f"+{sha}:refs/heads/upstream")
    old = commits(repo, f"{base}..HEAD")
    assert not any(git(other, "cat-file", "-t", c, check=False) for c in old)
    handle = Repo.open(other)
    try:
        result = applymod.run(series, handle, sha, branch, force=False)
    finally:
        handle.close()
    new = commits(other, f"{sha}..{result.head}")
    assert len(new) == len(old)
    return [(raw_commit(repo, a), raw_commit(other, b)) for a, b in zip(old, new, strict=True)]


def assert_same(pairs: list[tuple[Raw, Raw]], committer: bytes = b"C O Mitter "
                b"<committer@example.com>") -> None:
    for i, (old, new) in enumerate(pairs, 1):
        assert new.tree == old.tree, f"commit {i}: tree"
        assert new.author == old.author, f"commit {i}: author {new.author!r} != {old.author!r}"
        assert new.message == old.message, f"commit {i}: message {new.message!r}"
        assert new.extra == old.extra, f"commit {i}: extra headers"
        assert new.committer.startswith(committer + b" "), f"commit {i}: {new.committer!r}"
