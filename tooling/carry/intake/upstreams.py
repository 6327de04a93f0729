"""Which merges of a fork branch the linearizing import carries across, checked before any work.

A merge is "of upstream" when the range's base contains its second parent; octopus merges,
merges of an unrelated history and of two fork branches are refused (see `linearize`).

Upstream only moves forward: the series ends on the newest upstream the branch merged. A
merge of an upstream commit that an earlier merge already brought in (an older upstream
merged after a newer one, or the same one again) adds no upstream change: when its tree is
its fork side's, it is passed over, so that the series is not based back on the older
upstream with the newer one's lines carried inside a fork author's patch. Such a merge that
changes the tree, or a merge of an upstream line that neither contains nor follows the
last one merged (a release branch after main), is refused in one line.
"""

from __future__ import annotations

from carry.base.errors import CarryError
from carry.git import RawCommit, Repo


def passed_over(repo: Repo, base: str, read: dict[str, RawCommit], desc: str) -> set[str]:
    """The merges of `read` (oldest first) that bring in no upstream change, to be passed
    over; raises on any merge carry will not linearize."""
    newest, skip = "", set()
    for merge in (c for c in read.values() if len(c.parents) > 1):
        if len(merge.parents) > 2:
            raise CarryError(f"{desc} contains merge commit {merge.sha[:12]} of "
                             f"{len(merge.parents)} parents (an octopus merge); carry "
                             "linearises merges of two parents only",
                             hint="import the range after the octopus merge")
        up = merge.parents[1]
        if up in read:
            raise _not_upstream(repo, merge, desc, base)
        if not newest or repo.is_ancestor(newest, up):
            newest = up
            continue
        if not repo.is_ancestor(up, newest):
            raise CarryError(
                f"{desc}: merge commit {merge.sha[:12]} merges upstream {up[:12]}, which "
                f"neither contains nor follows upstream {newest[:12]} that an earlier merge "
                "brought in; carry linearises onto one upstream line",
                hint="import the range after that merge, or name one upstream line as --base")
        if merge.tree != repo.read_commit(merge.parents[0]).tree:
            raise CarryError(
                f"{desc}: merge commit {merge.sha[:12]} merges upstream {up[:12]}, older than "
                f"upstream {newest[:12]} that an earlier merge brought in, and changes the "
                "tree; carry will not base the series back on the older upstream",
                hint="move that merge's change into a commit of its own (git rebase -i), or "
                     "import the range after it")
        skip.add(merge.sha)
    return skip


def _not_upstream(repo: Repo, merge: RawCommit, desc: str, base: str) -> CarryError:
    """A merge whose second side the base does not contain: not a merge of upstream."""
    if repo.merge_base(*merge.parents) is None:
        return CarryError(f"{desc} contains merge commit {merge.sha[:12]} of an unrelated "
                          "history (its parents share no commit); carry will not carry a "
                          "second project's history as patches",
                          hint="import the range after that merge, or drop the merge")
    return CarryError(
        f"{desc} contains merge commit {merge.sha[:12]} whose second parent "
        f"{merge.parents[1][:12]} is not in the history of the base {base[:12]}: a merge of two "
        "fork branches, or of an upstream the base does not contain; carry linearises merges "
        "of upstream only",
        hint="name the upstream the branch merged as the base (--base upstream/main, or "
             "--range upstream/main..BRANCH); a merge of two fork branches needs a linear "
             "branch first (git rebase)")
