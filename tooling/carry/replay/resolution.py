"""A conflict a maintainer resolved by hand becomes the patch's commit."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from carry.base.errors import CarryError
from carry.git import Ident, Repo
from carry.replay.engine import PatchResult

_MARKER = re.compile(rb"^(?:<{7}|>{7})(?: |$)", re.M)


def take_resolution(repo: Repo, wt: Path, step: PatchResult, head: str, paths: Sequence[str],
                    committer: Ident) -> str:
    """The resolved worktree as the stopped patch's commit (its author and message kept), or
    a drop when the resolution leaves nothing; refused while conflict markers remain that
    neither side had."""
    if not wt.is_dir():
        raise CarryError(f"the conflict worktree {wt} is gone", hint="carry rebase --abort")
    work = Repo(wt.resolve())
    try:
        tree = work.stage_tracked()
        source = repo.read_commit(step.source)
        for p in paths:
            data = (wt / p).read_bytes() if (wt / p).is_file() else b""
            known = max(len(_MARKER.findall(repo.show_file(rev, p) or b""))
                        for rev in (head, step.source))
            if len(_MARKER.findall(data)) > known:
                raise CarryError(f"{p} still has conflict markers in {wt}",
                                 hint="resolve them, or carry rebase --skip")
    finally:
        work.close()
    if tree == repo.read_commit(head).tree:
        step.status, step.reason = "dropped", "empty after the conflict was resolved"
        return head
    new = repo.write_commit(tree, [head], source.message, source.author, committer,
                            source.encoding)
    step.status, step.reason, step.commit = "applied", "conflict resolved", new
    return new
