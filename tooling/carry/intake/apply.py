"""`carry apply`: commit a series onto any commit and point a branch at the result, with no
worktree, through the same chain code every other command uses (`carry.replay.chain`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from carry.base.errors import CarryError
from carry.git import Repo
from carry.replay.chain import materialize
from carry.series import patches as patchmod
from carry.series.store import Series


@dataclass(frozen=True)
class Applied:
    file: str
    subject: str
    author: str
    commit: str


@dataclass(frozen=True)
class ApplyResult:
    series: str
    onto: str
    branch: str
    head: str
    patches: list[Applied]


def run(series: Series, repo: Repo, onto: str, branch: str, force: bool,
        progress: Callable[[int, int, str], None] | None = None) -> ApplyResult:
    ref, old = repo.claim_branch(branch, force)
    onto_sha = repo.rev_parse(onto)
    plist = [patchmod.load(p.path, p.number) for p in series.patches()]
    if not plist:
        raise CarryError(f"series {series.name} has no patches yet", hint="run carry import")
    commits = materialize(repo, plist, onto_sha, repo.committer_ident(), progress)
    repo.set_ref(ref, commits[-1], old, message=f"carry apply {series.name}")
    applied = [Applied(p.file, p.subject, p.author.name, c)
               for p, c in zip(plist, commits, strict=True)]
    return ApplyResult(series.name, onto_sha, ref, commits[-1], applied)
