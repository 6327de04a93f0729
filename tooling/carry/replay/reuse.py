"""A replay that changes nothing keeps the commits its branch already has.

The replay writes commits with the committer's clock, so a second run onto the same commit
gives new shas for the same content: a CI loop would push and update its PR on every run.
`git rebase` says "up to date" in that case and keeps the commits; carry does the same when
the branch holds the replay step for step (tree, message, author, encoding of every commit,
on the same onto commit).
"""

from __future__ import annotations

from carry.git import Repo
from carry.replay.engine import TargetResult


def keep_existing(repo: Repo, result: TargetResult, old: str | None) -> bool:
    """Point `result` at the branch's own commits if they are the replay; whether they were."""
    made = [step for step in result.patches if step.commit]
    if not old or result.status != "applied":
        return False
    chain = repo.first_parent_chain(old, result.onto)
    if chain is None or len(chain) != len(made):
        return False
    if not chain:
        return old == result.onto
    parent = result.onto
    for step, sha in zip(made, chain, strict=True):
        a, b = repo.read_commit(step.commit), repo.read_commit(sha)
        if b.parents != (parent,) or (a.tree, a.message, a.author, a.encoding) != (
                b.tree, b.message, b.author, b.encoding):
            return False
        parent = sha
    for step, sha in zip(made, chain, strict=True):
        step.commit = sha
    result.head = old
    return True
