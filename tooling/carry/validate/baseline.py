"""The commit `validate --baseline` tests: the target without the fix, with the series' tests.

Its identity and date are fixed, so the same inputs give the same commit (and cache key).
"""

from __future__ import annotations

from collections.abc import Sequence

from carry.git import Ident, Repo

_CARRY = Ident("carry validate", "carry@localhost", "0 +0000")
MESSAGE = b"carry validate --baseline: the series' test files on the unfixed base\n"


def baseline_commit(repo: Repo, onto: str, head: str, files: Sequence[str]) -> str:
    """`onto` with `files` as they are in `head`."""
    tree = repo.overlay_tree(onto, head, files)
    return repo.write_commit(tree, [onto], MESSAGE, _CARRY, _CARRY)
